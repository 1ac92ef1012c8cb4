"""What stands where one of our directories goes, named in the refusal (jobdir.own_dirs): a FIFO, a
regular file, a special file (a socket here: a device needs mknod rights), and the ``..`` rule."""

from __future__ import annotations

import os
import socket

import pytest

from bridge_plugins.jobdir.own_dirs import UnsafeDirectoryError, real_dir_below


def _refusal(root, directory) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(UnsafeDirectoryError) as e:
        real_dir_below(root, directory)
    return str(e.value)


def test_each_kind_of_non_directory_is_named(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "file").write_text("x")
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(tmp_path / "sock"))
        for name, kind in (("fifo", "a FIFO"), ("file", "a regular file"), ("sock", "a special file")):
            target = tmp_path / name / "torch_profile"
            assert _refusal(tmp_path, target) == (
                f"{tmp_path / name} is not a directory ({kind}); remove it or choose another output_dir"
            )


def test_a_directory_reached_through_dotdot_is_the_users_own(tmp_path):
    """``root/../elsewhere``: outside what we create, so taken as given (a symlink the user chose
    included), never checked part by part."""
    (tmp_path / "root").mkdir()
    (tmp_path / "target").mkdir()
    (tmp_path / "elsewhere").symlink_to(tmp_path / "target")
    st = real_dir_below(tmp_path / "root", tmp_path / "root" / ".." / "elsewhere", create=False)
    assert (st.st_dev, st.st_ino) == (os.stat(tmp_path / "target").st_dev, os.stat(tmp_path / "target").st_ino)


def test_a_missing_root_is_made_with_its_parents(tmp_path):
    root = tmp_path / "a" / "b"
    real_dir_below(root, root / "torch_profile")
    assert (root / "torch_profile").is_dir()


def test_a_root_that_is_a_file_is_not_a_directory(tmp_path):
    (tmp_path / "out").write_text("x")
    with pytest.raises(NotADirectoryError):
        real_dir_below(tmp_path / "out", tmp_path / "out", create=False)
