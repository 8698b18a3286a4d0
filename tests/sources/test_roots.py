"""`check_source_path`: only paths inside `[server] source_roots` (after following links and `..`) pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from precube.sources.roots import SourceAccessError, check_source_path


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    """`data/` (the root, with a table directory `t/`), its sibling `data2/` and an outside file."""
    root = tmp_path / "data"
    (root / "t").mkdir(parents=True)
    (root / "t" / "part-0.parquet").write_bytes(b"x")
    (tmp_path / "data2" / "t").mkdir(parents=True)
    (tmp_path / "secret.txt").write_text("no")
    return root, tmp_path


def test_a_path_inside_a_root_resolves(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    assert check_source_path(str(root / "t"), [str(root)]) == str((root / "t").resolve())
    assert check_source_path(str(root / "t" / ".." / "t"), [str(root)]) == str((root / "t").resolve())
    assert check_source_path(f"file://{root / 't'}", [str(root)]) == str((root / "t").resolve())


@pytest.mark.parametrize(
    "given",
    [
        "{root}/../secret.txt",
        "{root}/t/../../secret.txt",
        "{base}/secret.txt",
        "{base}/data2/t",  # a sibling sharing the root's prefix
        "/etc/passwd",
        "file:///etc/passwd",
        "file://localhost/etc/passwd",
        "http://example.com/x.parquet",
        "s3a://bucket/x",
        "relative/t",
        "t",
        "{root}/t\0",
        "{root}/t\n",
        "",
    ],
)
def test_escapes_are_refused(tree: tuple[Path, Path], given: str) -> None:
    root, base = tree
    with pytest.raises(SourceAccessError) as err:
        check_source_path(given.format(root=root, base=base), [str(root)])
    assert "\n" not in str(err.value)


def test_a_symlink_out_of_the_root_is_refused(tree: tuple[Path, Path]) -> None:
    root, base = tree
    (root / "out").symlink_to(base / "data2" / "t")
    with pytest.raises(SourceAccessError, match="outside"):
        check_source_path(str(root / "out"), [str(root)])
    (root / "t" / "part-1.parquet").symlink_to(base / "secret.txt")  # a link inside the table's directory
    with pytest.raises(SourceAccessError, match="links outside"):
        check_source_path(str(root / "t"), [str(root)])


def test_no_roots_refuses_and_names_the_setting(tree: tuple[Path, Path]) -> None:
    root, _ = tree
    with pytest.raises(SourceAccessError, match="source_roots"):
        check_source_path(str(root / "t"), [])


def test_a_uri_root_admits_only_its_prefix() -> None:
    roots = ["s3a://bucket/data"]
    assert check_source_path("s3a://bucket/data/t", roots) == "s3a://bucket/data/t"
    for bad in ("s3a://bucket/data2/t", "s3a://bucket/data/../x", "s3a://other/data/t", "http://bucket/data/t"):
        with pytest.raises(SourceAccessError):
            check_source_path(bad, roots)
