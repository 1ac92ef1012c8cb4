"""The one atomic write (jobdir.atomic_write): published whole under its name, never a leftover."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bridge_plugins.jobdir.atomic_write import NotWrittenWhole, StagedFile, write_text_atomically


def _hidden(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_replace_puts_the_new_text_in_place_and_leaves_nothing_else(tmp_path):
    target = tmp_path / "progress.json"
    target.write_text("old")
    assert write_text_atomically(target, "new", replace=True) == target
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["progress.json"]


def test_without_replace_an_existing_file_is_kept_and_nothing_is_left(tmp_path):
    target = tmp_path / "1.json"
    target.write_text("first")
    with pytest.raises(FileExistsError) as e:
        write_text_atomically(target, "second", replace=False)
    assert str(e.value) == f"[Errno 17] File exists: '{target}'"  # what a caller shows
    assert target.read_text() == "first"
    assert _hidden(tmp_path) == []


def test_a_new_name_gets_the_file_with_the_mode_asked(tmp_path):
    target = tmp_path / "report.html"
    write_text_atomically(target, "<html>", replace=False, mode=0o644)
    assert target.read_text() == "<html>" and (target.stat().st_mode & 0o777) == 0o644
    assert _hidden(tmp_path) == []


def test_a_planted_symlink_at_the_name_is_neither_followed_nor_written_through(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (tmp_path / "out.json").symlink_to(victim)
    with pytest.raises(FileExistsError):
        write_text_atomically(tmp_path / "out.json", "x", replace=False)
    assert victim.read_text() == "precious"
    write_text_atomically(tmp_path / "out.json", "x", replace=True)  # replaces the link itself
    assert victim.read_text() == "precious" and not (tmp_path / "out.json").is_symlink()
    assert (tmp_path / "out.json").read_text() == "x"


def test_the_first_free_name_is_taken(tmp_path):
    (tmp_path / "t.json").write_text("taken")
    with StagedFile(tmp_path, "t", ".json") as staged:
        staged.write_text("mine")
        final = staged.publish(tmp_path / n for n in ("t.json", "t.1.json", "t.2.json"))
    assert final == tmp_path / "t.1.json" and final.read_text() == "mine"
    assert (tmp_path / "t.json").read_text() == "taken" and _hidden(tmp_path) == []


def test_a_failed_publish_leaves_nothing_behind(tmp_path):
    (tmp_path / "progress.json").mkdir()  # planted where the file goes: rename fails
    (tmp_path / "progress.json" / "x").write_text("")
    with pytest.raises(OSError):
        write_text_atomically(tmp_path / "progress.json", "{}", replace=True)
    assert _hidden(tmp_path) == []


def test_a_producer_that_makes_a_symlink_is_refused(tmp_path):
    with StagedFile(tmp_path, "t", ".json") as staged, pytest.raises(NotWrittenWhole, match="not a regular file"):
        staged.path.symlink_to(tmp_path)
        staged.publish([tmp_path / "t.json"])
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_full_file_system_leaves_neither_the_file_nor_a_temp(tmp_path):
    """A write past RLIMIT_FSIZE fails as a full disk does (EFBIG instead of ENOSPC), mid-file."""
    script = textwrap.dedent(
        f"""
        import resource, signal
        from pathlib import Path
        from bridge_plugins.jobdir.atomic_write import write_text_atomically
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            write_text_atomically(Path({str(tmp_path / "report.html")!r}), "x" * 100_000, replace=True)
        except OSError as e:
            print("failed:", e.strerror)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.strip() == "failed: File too large", out.stdout + out.stderr
    assert list(tmp_path.iterdir()) == []


def test_the_text_is_utf8_whatever_the_locale(tmp_path):
    """A report or request holding non-ASCII text, written by a process whose locale's charset is not
    UTF-8 (en_US.ISO-8859-1 on older clusters; none is installed here, so the child switches its
    LC_CTYPE to "C", ASCII, after starting with Python's UTF-8 mode off)."""
    text = "step time 12 µs – naïve ✓"
    script = "\n".join(
        [
            "import locale, sys",
            "from pathlib import Path",
            "from bridge_plugins.jobdir.atomic_write import write_text_atomically",
            "locale.setlocale(locale.LC_CTYPE, 'C')",
            "assert locale.getpreferredencoding(False) == 'ANSI_X3.4-1968' and not sys.flags.utf8_mode",
            f"write_text_atomically(Path({str(tmp_path / 'r.html')!r}), {text!a}, replace=False)",
        ]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING"))}
    env.update(PYTHONPATH=str(Path(__file__).resolve().parents[2]), LC_ALL="C.UTF-8", PYTHONUTF8="0")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    write_text_atomically(tmp_path / "here.html", text, replace=False)  # this process's locale
    assert (tmp_path / "r.html").read_bytes() == (tmp_path / "here.html").read_bytes() == text.encode("utf-8")


def _no_hard_links(src, dst, **kwargs):
    """Stand-in for a file system without hard links (vfat, some FUSE and SMB mounts; none can be
    mounted here): os.link fails as vfat's does."""
    raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), str(src), None, str(dst))


def test_without_hard_links_the_file_is_renamed_to_the_first_free_name(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "link", _no_hard_links)
    (tmp_path / "t.json").write_text("taken")
    (tmp_path / "t.1.json").symlink_to(tmp_path / "nowhere")  # dangling: still taken
    names = [tmp_path / n for n in ("t.json", "t.1.json", "t.2.json")]
    with StagedFile(tmp_path, "t", ".json") as staged:
        staged.write_text("mine")
        assert staged.publish(names) == tmp_path / "t.2.json"
    assert (tmp_path / "t.2.json").read_text() == "mine" and (tmp_path / "t.json").read_text() == "taken"
    assert (tmp_path / "t.1.json").is_symlink() and _hidden(tmp_path) == []
    with StagedFile(tmp_path, "t", ".json") as staged, pytest.raises(FileExistsError) as e:
        staged.write_text("again")
        staged.publish(names)
    assert str(e.value) == f"[Errno 17] File exists: '{tmp_path / 't.2.json'}'"  # the last name tried
    assert (tmp_path / "t.2.json").read_text() == "mine" and _hidden(tmp_path) == []


def test_a_name_replaced_right_after_the_link_is_refused(tmp_path, monkeypatch):
    real_link = os.link

    def link_then_replaced(src, dst, **kwargs):
        """Stand-in for a race no test can time: another writer replaces the name between our
        link and the check that follows it."""
        real_link(src, dst, **kwargs)
        os.replace(tmp_path / "theirs", dst)

    (tmp_path / "theirs").write_text("theirs")
    monkeypatch.setattr(os, "link", link_then_replaced)
    with StagedFile(tmp_path, "t", ".json") as staged, pytest.raises(NotWrittenWhole) as e:
        staged.write_text("mine")
        staged.publish([tmp_path / "t.json"])
    assert str(e.value) == f"{tmp_path / 't.json'} is not the file that was written (replaced while publishing)"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.json"] and (tmp_path / "t.json").read_text() == "theirs"
