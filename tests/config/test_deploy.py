import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_is_clean_with_production_settings(tmp_path):
    env = {
        **os.environ,
        "SECRET_KEY": "x" * 20 + "-production-secret-key-for-the-deploy-check-0123456789",
        "DEBUG": "0",
        "SECURE_COOKIES": "1",
        "SECURE_SSL_REDIRECT": "1",
        "SECURE_HSTS_SECONDS": "31536000",
        "BEHIND_PROXY": "1",
        "STATIC_MANIFEST": "1",
        "VAR_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
