"""The SSRF judgement, pure: every spelling of an address is judged as the address it stands for.

Nothing here resolves a name or opens a socket: `url_refusal` reads literals and names only.
"""

from __future__ import annotations

import pytest

from bridge.ssrf import literal_address, normalise_host, url_refusal

LOOPBACK_SPELLINGS = [
    "http://127.0.0.1/mcp",
    "http://127.1/mcp",
    "http://2130706433/mcp",
    "http://0x7f.1/mcp",
    "http://0x7f000001/mcp",
    "http://127.0.0.1./mcp",
    "http://[::1]/mcp",
    "http://[::ffff:127.0.0.1]/mcp",
    "http://[::ffff:7f00:1]/mcp",
    "http://[0:0:0:0:0:0:0:1]/mcp",
    "http://0.0.0.0/mcp",  # Linux dials this machine
    "http://[::]/mcp",
    "http://localhost/mcp",
    "http://LocalHost./mcp",
    "http://api.localhost/mcp",
]
PRIVATE_SPELLINGS = [
    "http://10.0.0.1/mcp",
    "http://10.1/mcp",
    "http://167772161/mcp",
    "http://192.168.1.10/mcp",
    "http://172.16.0.1/mcp",
    "http://100.64.0.1/mcp",  # carrier-grade NAT
    "http://[fc00::1]/mcp",
    "http://[::ffff:10.0.0.1]/mcp",
    "http://[2002:a00:1::]/mcp",  # 6to4 around 10.0.0.1
    "http://[64:ff9b::a00:1]/mcp",  # NAT64 around 10.0.0.1
    "http://224.0.0.1/mcp",
]
METADATA_SPELLINGS = [
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.169.254.:80/",
    "http://2852039166/",
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://0xa9fea9fe/",
    "http://169.254.43518/",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://[fd00:ec2::254]/",
    "http://[2002:a9fe:a9fe::]/",
    "http://[fe80::1]/",
    "http://169.254.170.2/v2/credentials",
    "http://100.100.100.200/latest/meta-data",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
    "http://metadata/",
    "http://metadata.azure.com/",
    "http://instance-data/",
]
PUBLIC = ["https://api.example.com/mcp", "https://8.8.8.8/mcp", "https://[2001:4860:4860::8888]/mcp",
          "https://bücher.example/mcp", "https://0xdeadbeef.example/mcp"]


@pytest.mark.parametrize("url", LOOPBACK_SPELLINGS + PRIVATE_SPELLINGS + METADATA_SPELLINGS)
def test_every_spelling_of_a_non_public_address_is_refused_while_served_over_http(url: str) -> None:
    assert url_refusal(url, "public") is not None


@pytest.mark.parametrize("url", PUBLIC)
def test_public_addresses_and_names_pass_while_served_over_http(url: str) -> None:
    assert url_refusal(url, "public") is None


@pytest.mark.parametrize("url", METADATA_SPELLINGS)
def test_metadata_and_link_local_are_refused_even_where_private_addresses_are_allowed(url: str) -> None:
    assert url_refusal(url, "no-metadata") is not None


@pytest.mark.parametrize("url", LOOPBACK_SPELLINGS + PRIVATE_SPELLINGS)
def test_loopback_and_private_pass_where_private_addresses_are_allowed(url: str) -> None:
    assert url_refusal(url, "no-metadata") is None


@pytest.mark.parametrize("url", METADATA_SPELLINGS + LOOPBACK_SPELLINGS)
def test_the_operator_may_register_anything(url: str) -> None:
    assert url_refusal(url, "anywhere") is None


def test_the_refusal_names_the_address_the_spelling_stands_for() -> None:
    assert url_refusal("http://0xa9fea9fe/", "public") == "169.254.169.254 is a cloud metadata service"
    assert url_refusal("http://127.1/", "public") == "127.0.0.1 is this machine (loopback)"


@pytest.mark.parametrize(
    ("host", "address"),
    [("127.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("::ffff:127.0.0.1", "::ffff:7f00:1"),
     ("deadbeef", None), ("1e100.net", None), ("example.com", None)],
)
def test_literals_are_read_as_inet_aton_reads_them_and_names_stay_names(host: str, address: str | None) -> None:
    found = literal_address(host)
    assert (str(found) if found else None) == address


def test_hosts_are_normalised_as_the_transport_looks_them_up() -> None:
    assert normalise_host("http://BÜCHER.example./x") == "xn--bcher-kva.example"
    assert normalise_host("http://[::1]:8080/x") == "::1"
