"""make deps: a probe runs what it probes, and one that fails names its
package (apt-packages.txt's $(<command>) lines)."""
import pytest

from lab import deps


def test_a_failing_probe_names_its_package_and_a_passing_one_none():
    pairs = deps.parse("$(sh -c 'echo no Mail/Address.pm >&2; exit 2') libmailtools-perl\n"
                       "$(true) coreutils\n"
                       "$(no-such-program-here --x) pkg-z   # its program absent\n"
                       "sh dash\n")
    assert pairs[0] == ("$(sh -c 'echo no Mail/Address.pm >&2; exit 2')", "libmailtools-perl")
    assert [p for _, p in deps.missing(pairs)] == ["libmailtools-perl", "pkg-z"]


def test_a_failing_probe_is_named_by_its_command_and_what_it_said():
    assert deps.describe("$(sh -c 'echo first >&2; echo second >&2; exit 3')") == (
        "`sh -c 'echo first >&2; echo second >&2; exit 3'` fails (exit 3: first)")
    assert deps.describe("$(no-such-program-here)") == (
        "`no-such-program-here` fails (no-such-program-here not found)")
    assert deps.describe("quilt") == "quilt"


def test_a_probe_that_hangs_fails(monkeypatch):
    monkeypatch.setattr(deps, "PROBE_SECONDS", 0.2)
    assert deps.probe_failure("sleep 5") == "no end after 0.2 s"


def test_git_send_email_s_address_parser_is_probed():
    """git-email only recommends libmailtools-perl: a probe must load what
    send-email loads to parse an address, and name the package."""
    probes = {t: p for t, p in deps.parse(deps.LIST.read_text()) if deps.PROBE_RE.fullmatch(t)}
    assert probes.get("$(perl -MGit::LoadCPAN::Mail::Address -e 1)") == "libmailtools-perl"
    assert probes.get('$(python3 -c "import ensurepip")') == "python3-venv"


def test_the_probe_fails_without_mail_address(tmp_path, monkeypatch):
    """Mail::Address made unloadable (as if libmailtools-perl were not
    installed): the probe fails, as git send-email would."""
    if deps.probe_failure("perl -MGit::LoadCPAN::Mail::Address -e 1"):
        pytest.skip("git's Perl modules or libmailtools-perl are not installed here")
    (tmp_path / "Mail").mkdir()
    (tmp_path / "Mail/Address.pm").write_text('die "Can\'t locate Mail/Address.pm\\n";\n')
    monkeypatch.setenv("PERL5LIB", str(tmp_path))
    assert deps.missing([("$(perl -MGit::LoadCPAN::Mail::Address -e 1)",
                          "libmailtools-perl")]) != []


def test_make_deb_s_packages_are_listed():
    """make bindeb-pkg: dpkg-buildpackage, debhelper (probed by running it),
    kmod, and arm64's libssl-dev, which a cross build's dpkg-checkbuilddeps
    asks for (Unmet build dependencies: libssl-dev)."""
    listed = dict(deps.parse(deps.LIST.read_text()))
    assert listed["dpkg-buildpackage"] == "dpkg-dev"
    assert listed["$(dh_assistant supported-compat-levels)"] == "debhelper"
    assert listed["kmod"] == "kmod"
    assert listed["/usr/include/aarch64-linux-gnu/openssl/opensslconf.h"] == "libssl-dev:arm64"


def test_the_debhelper_probe_fails_when_debhelper_cannot_run(tmp_path, monkeypatch):
    """dh_assistant present but its Perl library broken (a half-removed
    debhelper): the probe runs it, so it fails, as debian/rules would."""
    if deps.probe_failure("dh_assistant supported-compat-levels"):
        pytest.skip("debhelper is not installed here")
    (tmp_path / "Debian/Debhelper").mkdir(parents=True)
    (tmp_path / "Debian/Debhelper/Dh_Lib.pm").write_text('die "Dh_Lib is broken\\n";\n')
    monkeypatch.setenv("PERL5LIB", str(tmp_path))
    assert deps.describe("$(dh_assistant supported-compat-levels)") == (
        "`dh_assistant supported-compat-levels` fails (exit 255: Dh_Lib is broken)")
