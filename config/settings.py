"""Settings, read from the environment; see README.md for every variable."""

import ipaddress
import os
import warnings
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from csp.constants import NONCE, NONE, SELF, UNSAFE_INLINE
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if value is None:
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str | None) -> dict:
    """Turn DATABASE_URL into a DATABASES entry; unset means a SQLite file under var/."""
    if not url:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": VAR_DIR / "db.sqlite3",
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
            "TEST": {"NAME": VAR_DIR / "test.sqlite3"},
        }
    parsed = urlparse(url)
    if parsed.scheme in {"sqlite", "sqlite3"}:
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": unquote(parsed.path[1:] if parsed.path.startswith("//") else parsed.path) or ":memory:",
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE"},
        }
    if parsed.scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ValueError(f"DATABASE_URL: unsupported scheme {parsed.scheme!r} (use postgres:// or sqlite://)")
    query = {key: values[-1] for key, values in parse_qs(parsed.query).items()}
    options: dict = {}
    if env_bool("DATABASE_POOL", False):
        options["pool"] = {"min_size": env_int("DATABASE_POOL_MIN", 2), "max_size": env_int("DATABASE_POOL_MAX", 10)}
    if "sslmode" in query:
        options["sslmode"] = query["sslmode"]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": parsed.hostname or "",
        "PORT": str(parsed.port or ""),
        "CONN_MAX_AGE": 0 if options.get("pool") else env_int("DATABASE_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
        # A write waits at most this long for a run lock, then answers `retry` (STYLE: bounded waits).
        "OPTIONS": {
            **options,
            "options": f"-c lock_timeout={env_int('LOCK_TIMEOUT_MS', 5000)}",
            # Parameters travel apart from the statement, and a statement run this many times on a
            # connection is prepared once (0 turns that off, as a transaction-mode pooler may need).
            "server_side_binding": True,
            "prepare_threshold": env_int("DATABASE_PREPARE_THRESHOLD", 5) or None,
        },
    }


DEVELOPMENT_SECRET_KEY = "development-only-secret-key-change-me-in-production-0123456789"
SECRET_KEY = os.environ.get("SECRET_KEY") or DEVELOPMENT_SECRET_KEY
DEBUG = env_bool("DEBUG", False)
if SECRET_KEY == DEVELOPMENT_SECRET_KEY:
    warnings.warn("SECRET_KEY is not set: using the development key. Set SECRET_KEY in production.", stacklevel=1)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
PUBLIC_URL = os.environ.get("PUBLIC_URL", "").rstrip("/")

# /metrics answers a scraper on these networks, or one sending `Authorization: Bearer <METRICS_TOKEN>`.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
try:
    METRICS_ALLOWED_NETWORKS = [
        ipaddress.ip_network(item, strict=False)
        for item in env_list("METRICS_ALLOWED_NETWORKS", ["127.0.0.0/8", "::1/128"])
    ]
except ValueError as error:
    raise ImproperlyConfigured(f"METRICS_ALLOWED_NETWORKS: {error}") from None

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "allauth.idp.oidc",
    "accounts",
    "processes",
    "runs",
    "work",
]

MIDDLEWARE = [
    "config.middleware.CountResponses",
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "config.middleware.RefuseUnstorableText",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "accounts.middleware.StaffTwoFactor",
    "accounts.middleware.PersonTimeZone",
    "config.middleware.RefuseBadParameters",
]

# The benchmarks start the server with ROOT_URLCONF=bench.urls, which adds their floor endpoint.
ROOT_URLCONF = os.environ.get("ROOT_URLCONF", "config.urls")
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "csp.context_processors.nonce",
                "work.context.unread_notices",
                "work.context.operator",
                "work.context.live",
            ],
        },
    },
]

# Every page's Content-Security-Policy (django-csp). Scripts come from this server only, or inline with
# the request's nonce ({{ CSP_NONCE }}); no inline event handler runs. Styles may be inline: the pages,
# Mermaid's diagrams and Swagger UI write style attributes and elements. Images may be data: URIs
# (Swagger UI's icons). The consent page drops form-action: the answer to its form is a redirect to the
# agent's registered redirect URI, and Chromium applies form-action to that redirect too.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF, NONCE],
        "style-src": [SELF, UNSAFE_INLINE],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}

DATABASES = {"default": database_from_url(os.environ.get("DATABASE_URL"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_REDIRECT_URL = "/inbox/"
LOGIN_URL = "/accounts/login/"

ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
ACCOUNT_EMAIL_VERIFICATION = os.environ.get("ACCOUNT_EMAIL_VERIFICATION", "none")
ACCOUNT_ADAPTER = "accounts.adapters.AccountAdapter"
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
# A password reset for an address with no account sends nothing (nobody learns which addresses have one).
ACCOUNT_EMAIL_UNKNOWN_ACCOUNTS = False
# Sign-ins allowed per client address. allauth also locks an email address after 5 failed sign-ins in 5
# minutes (and counts 10 failures a minute per client address).
ACCOUNT_LOGIN_RATE = os.environ.get("ACCOUNT_LOGIN_RATE", "30/m/ip")
# Registration is open to anyone (accounts/registration.py serves it, in place of allauth's view): the
# rate limit per address is checked first, in allauth's rate limiter; then the body, each text, each list
# and the registrations never used are capped.
ACCOUNT_RATE_LIMITS = {
    "login": ACCOUNT_LOGIN_RATE,
    "oauth_client_registration": os.environ.get("OAUTH_REGISTRATION_RATE", "10/m/ip"),
}
# Staff with no authenticator are sent to set one up before any page or the admin opens (accounts.middleware).
STAFF_REQUIRE_MFA = env_bool("STAFF_REQUIRE_MFA", False)
# Every limit counts a client by the address allauth's adapter reads (get_client_ip): the connection's
# address, or behind proxies of ours the one they name. X-Forwarded-For is read only when this many proxies
# stand in front (its last that many entries are theirs; BEHIND_PROXY means one); a header a proxy of ours
# sets may be named instead.
ALLAUTH_TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 1 if env_bool("BEHIND_PROXY", False) else 0)
ALLAUTH_TRUSTED_CLIENT_IP_HEADER = os.environ.get("TRUSTED_CLIENT_IP_HEADER") or None

# --- OAuth 2.1 authorization server (allauth.idp.oidc) ---
def development_oidc_key(path: Path) -> str:
    """Return the PEM at path, generating a 2048-bit RSA key there (mode 0600) on first use."""
    if not path.exists():
        import tempfile

        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        # mkstemp creates the file 0600; linking it into place is atomic and refuses to overwrite,
        # so two processes starting at once agree on one key and never read a half-written file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".oidc-key-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(pem)
            try:
                os.link(tmp, path)
                warnings.warn(
                    f"IDP_OIDC_PRIVATE_KEY is not set: generated a development signing key at {path}.",
                    stacklevel=1,
                )
            except FileExistsError:
                pass
        finally:
            os.unlink(tmp)
    return path.read_text()


# The PEM may arrive from an env file with its newlines escaped.
IDP_OIDC_PRIVATE_KEY = os.environ.get("IDP_OIDC_PRIVATE_KEY", "").replace("\\n", "\n") or development_oidc_key(
    VAR_DIR / "oidc-private-key.pem"
)
# A validated access token is remembered this many seconds per process (0: never); whatever ends a token
# takes effect in every other process within this bound (accounts/token_memo.py).
TOKEN_CACHE_SECONDS = env_int("TOKEN_CACHE_SECONDS", 5)
# On PostgreSQL a write to a run reads without the run's lock and is applied by one statement only if
# the run is unchanged since (runs/idempotency.py); off, every write locks the run in a transaction.
OPTIMISTIC_WRITES = env_bool("OPTIMISTIC_WRITES", True)
# Each process keeps the rows of this many runs as its last optimistic write to each left them, and
# decides the run's next write from them without reading it again (runs/snapshots.py); 0: every write reads.
RUN_SNAPSHOTS = env_int("RUN_SNAPSHOTS", 256)
IDP_OIDC_ACCESS_TOKEN_EXPIRES_IN = env_int("ACCESS_TOKEN_SECONDS", 3600)
# Opaque tokens are checked with one indexed lookup of their hash, and revoking one takes effect at once.
IDP_OIDC_ACCESS_TOKEN_FORMAT = "opaque"
# Issuer and metadata URLs from PUBLIC_URL, URL-safe client secrets, the API scope in the metadata.
IDP_OIDC_ADAPTER = "accounts.oauth.OIDCAdapter"
# MCP clients connect by URL: they register themselves (RFC 7591, public clients with PKCE only) or name
# a Client ID Metadata Document as their client_id, then a person signs in and consents.
IDP_OIDC_DCR_ENABLED = env_bool("OAUTH_CLIENT_REGISTRATION", True)
IDP_OIDC_DCR_REQUIRES_INITIAL_ACCESS_TOKEN = False
# Metadata documents are fetched by accounts/metadata_documents.py, which connects to the address it
# checked; allauth's own fetch (which resolves the name again) stays off.
IDP_OIDC_CIMD_ENABLED = False
OAUTH_CLIENT_METADATA_DOCUMENTS = env_bool("OAUTH_CLIENT_METADATA_DOCUMENTS", True)
OAUTH_CLIENT_METADATA_CACHE_SECONDS = env_int("OAUTH_CLIENT_METADATA_CACHE_SECONDS", 3600)
OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE = env_int("OAUTH_CLIENT_METADATA_FETCHES_PER_MINUTE", 10)
IDP_OIDC_ROTATE_REFRESH_TOKEN = True
IDP_OIDC_REFRESH_TOKEN_EXPIRES_IN = env_int("REFRESH_TOKEN_SECONDS", 30 * 24 * 3600) or None
# A metadata document on a private or loopback address is never fetched (SSRF), unless this is set
# (development and tests).
OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES = env_bool("OAUTH_CLIENT_METADATA_PRIVATE_ADDRESSES", False)
# A self-registered client nobody connected within this long is deleted by the timer sweep.
OAUTH_UNUSED_CLIENT_SECONDS = env_int("OAUTH_UNUSED_CLIENT_SECONDS", 24 * 3600)
OAUTH_REGISTRATION_MAX_BYTES = env_int("OAUTH_REGISTRATION_MAX_BYTES", 16 * 1024)
OAUTH_REGISTRATION_MAX_CHARS = env_int("OAUTH_REGISTRATION_MAX_CHARS", 2000)
OAUTH_REGISTRATION_MAX_URIS = env_int("OAUTH_REGISTRATION_MAX_URIS", 10)
OAUTH_UNUSED_CLIENTS_MAX = env_int("OAUTH_UNUSED_CLIENTS_MAX", 1000)
# --- end OAuth ---

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if env_bool("STATIC_MANIFEST", False)
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = True

REDIS_URL = os.environ.get("REDIS_URL", "")
# One cache shared by every worker and node, so that rate limits and sign-in lockouts count every request:
# Redis when there is one, else a table in the database (made by `migrate`, see accounts/apps.py).
CACHE_KEY_PREFIX = os.environ.get("CACHE_KEY_PREFIX", "")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": CACHE_KEY_PREFIX,
    }
    if REDIS_URL
    else {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "django_cache",
        "KEY_PREFIX": CACHE_KEY_PREFIX,
    },
    # The pages' change stamps (runs/live.py): Redis when REDIS_URL is set, which every node shares; else
    # this process's memory, enough for one node. An unreachable Redis answers within LIVE_CACHE_TIMEOUT_MS
    # and the pages fall back to a slow refresh.
    "live": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": CACHE_KEY_PREFIX + "live",
        "OPTIONS": {
            "socket_connect_timeout": env_int("LIVE_CACHE_TIMEOUT_MS", 250) / 1000,
            "socket_timeout": env_int("LIVE_CACHE_TIMEOUT_MS", 250) / 1000,
        },
    }
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "live"},
}
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
SWEEP_SECONDS = env_int("SWEEP_SECONDS", 5)
CELERY_BEAT_SCHEDULE = {
    "sweep-due-runs": {"task": "runs.tasks.sweep", "schedule": float(SWEEP_SECONDS)},
}
# `serve` (what `make run` starts) also runs the demo agent, which works the demo processes' agent steps
# through the REST API; DEMO_AGENT=0 turns it off (a client under test may want the agent steps itself).
DEMO_AGENT = env_bool("DEMO_AGENT", False)
DEMO_AGENT_PAUSE = float(os.environ.get("DEMO_AGENT_PAUSE", "3"))
# `make run` (no Redis) runs the sweep in a thread of the server process.
IN_PROCESS_SWEEP = env_bool("IN_PROCESS_SWEEP", False)

EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend" if os.environ.get("EMAIL_HOST") else
    "django.core.mail.backends.console.EmailBackend",
)
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "processes@localhost")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "accounts.authentication.BearerTokenAuthentication",
        "accounts.authentication.SameOriginSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["api.parsers.StrictJSONParser"],
    "EXCEPTION_HANDLER": "api.rest.exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "agentprocess server",
    "DESCRIPTION": "The agentprocess core-2 tools over REST. Every response is the tools.md envelope.",
    "VERSION": "core-2",
    "SERVE_INCLUDE_SCHEMA": False,
    "OAS_VERSION": "3.1.0",
    "POSTPROCESSING_HOOKS": ["api.openapi.add_tool_paths", "api.oauth_openapi.add_oauth_paths"],
    # Swagger UI's scripts and styles come from this server (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No badge from validator.swagger.io: the docs fetch nothing from elsewhere (and the CSP would refuse it).
    "SWAGGER_UI_SETTINGS": {"deepLinking": True, "validatorUrl": None},
}

# Protocol settings (spec §3.3, tools.md describe).
LEASE_SECONDS = env_int("LEASE_SECONDS", 600)
MAX_UPLOAD_BYTES = env_int("MAX_UPLOAD_BYTES", 10 * 1024 * 1024)
RUN_DATA_BYTES = env_int("RUN_DATA_BYTES", 1024 * 1024)
FILE_URL_SECONDS = env_int("FILE_URL_SECONDS", 900)
# The operators' pages: an agent step ready this long with no agent on it needs someone's attention.
UNCLAIMED_AFTER_HOURS = env_int("UNCLAIMED_AFTER_HOURS", 4)
# Open pages ask every LIVE_POLL_SECONDS whether anything they show changed (runs/live.py); the change
# stamps live in the cache named LIVE_CACHE, which several app nodes must share.
LIVE_POLL_SECONDS = env_int("LIVE_POLL_SECONDS", 4)
LIVE_CACHE = os.environ.get("LIVE_CACHE", "live")
# A comment's Markdown, in characters.
COMMENT_MAX_CHARS = env_int("COMMENT_MAX_CHARS", 5000)
MAX_PROCESS_BYTES = env_int("MAX_PROCESS_BYTES", 1024 * 1024)
# Uploads arrive base64-encoded inside JSON, so the body cap is a little over 4/3 of the upload cap.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("MAX_REQUEST_BYTES", MAX_UPLOAD_BYTES * 4 // 3 + 64 * 1024)
# A form's list sends one input a cell (work/grids.py: up to 500 lines of 50 fields), more than Django's 1000.
DATA_UPLOAD_MAX_NUMBER_FIELDS = 30_000
PROFILES_ENABLED = env_list("PROFILES", [])
CHECK_EVALUATOR_URL = os.environ.get("CHECK_EVALUATOR_URL", "")
CHECK_EVALUATOR_MODEL = os.environ.get("CHECK_EVALUATOR_MODEL", "")
CHECK_EVALUATOR_API_KEY = os.environ.get("CHECK_EVALUATOR_API_KEY", "")
CHECK_EVALUATOR_TIMEOUT = float(os.environ.get("CHECK_EVALUATOR_TIMEOUT", "20"))
# check-1 defaults (describe.limits): yes/no pass threshold, fail threshold, confidence, run data shown.
CHECK_PASS = float(os.environ.get("CHECK_PASS", "0.9"))
CHECK_FAIL = float(os.environ["CHECK_FAIL"]) if os.environ.get("CHECK_FAIL") else None
CHECK_CONFIDENCE = float(os.environ.get("CHECK_CONFIDENCE", "0.8"))
CHECK_STATE_BYTES = env_int("CHECK_STATE_BYTES", 65536)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "config.logging.JSONFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": os.environ.get("LOG_FORMAT", "plain")}
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
    CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", False)
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", SECURE_HSTS_SECONDS > 0)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", SECURE_HSTS_SECONDS > 0)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_PROXY", False) else None
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
