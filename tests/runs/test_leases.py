"""Claim tokens (spec §6 rule 2): an HMAC of the lease's id, which verifies without a lookup."""

from django.test import override_settings
from django.utils.crypto import salted_hmac

from runs import leases


def test_a_token_is_the_lease_id_signed_as_djangos_salted_hmac_signs_it():
    # Tokens given out before keep verifying: the signature is salted_hmac's, whose key is derived
    # once per secret here.
    lease_id = leases.new_lease_id()
    for secret in ("first-secret-" + "x" * 40, "second-secret-" + "y" * 40):
        with override_settings(SECRET_KEY=secret):
            expected = salted_hmac("agentprocess.lease-token", lease_id, algorithm="sha256").hexdigest()
            assert leases.token_for(lease_id) == f"apt1.{lease_id}.{expected}"
            assert leases.lease_id_from(leases.token_for(lease_id)) == lease_id


def test_a_token_signed_under_another_secret_or_altered_does_not_verify():
    lease_id = leases.new_lease_id()
    with override_settings(SECRET_KEY="one-secret-" + "x" * 40):
        token = leases.token_for(lease_id)
    with override_settings(SECRET_KEY="another-secret-" + "y" * 40):
        assert leases.lease_id_from(token) is None
    altered = token[:-1] + ("0" if token[-1] != "0" else "1")
    assert leases.lease_id_from(altered) is None
    assert leases.lease_id_from("apt1." + lease_id) is None
    assert leases.lease_id_from(None) is None


def test_a_token_of_any_text_is_refused_as_not_verifying():
    # Strangers' tokens reach lease_id_from unchecked: text hmac cannot compare, or encode, is no token.
    for token in ("apt1.é.x", "apt1.\ud800.x", "apt1." + "a" * 32 + ".ü", "", "a.b.c", "." * 3):
        assert leases.lease_id_from(token) is None, token
