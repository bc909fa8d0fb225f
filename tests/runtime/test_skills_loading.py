"""``Server.add_skills`` loading a skills root from disk: what is served (the files, their digests, the frontmatter
as hosts parse it) and what is refused at load, with an error naming the file and the rule: paths leaving the skill
(symlinks, absolute targets), symlinked directories, nested skills, special files, frontmatter that breaks the
Agent Skills rules or that a YAML 1.2 host would read differently, the SEP's limits and this runtime's bounds, and a
clash with what is served already. Without PyYAML, a clear error naming the extra (a real subprocess).
The wire is tests/runtime/test_skills_server.py.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from skill_dirs import write_skill

from mcpgen_runtime.server import Server
from mcpgen_runtime.server.skills import SkillError, SkillLimits, load_skills


def served(server: Server) -> list[str]:
    return sorted(uri for uri in server.resources if uri.startswith("skill://"))


def test_a_root_of_skills_loads_every_file_hashed(tmp_path: Path) -> None:
    write_skill(tmp_path, "alpha", {"ref/guide.md": "# guide\n", "data.bin": b"\x00\xff\x10"})
    write_skill(tmp_path, "beta", extra="metadata:\n  team: docs\n")
    (tmp_path / "not-a-skill").mkdir()  # no SKILL.md: skipped
    (tmp_path / "README.md").write_text("a file in the root is no skill")
    (tmp_path / "alpha" / ".git").mkdir()
    (tmp_path / "alpha" / ".git" / "HEAD").write_text("hidden: not served")
    (tmp_path / "alpha" / ".DS_Store").write_bytes(b"x")
    server = Server("skills")
    assert server.add_skills(tmp_path) == ["alpha", "beta"]
    assert served(server) == [
        "skill://alpha/SKILL.md",
        "skill://alpha/data.bin",
        "skill://alpha/ref/guide.md",
        "skill://beta/SKILL.md",
    ]
    assert server.capabilities()["extensions"] == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
    assert server.skills is not None
    alpha = server.skills.skills["alpha"]
    assert alpha.files[0].path == "SKILL.md"
    for file in alpha.files:
        data = (tmp_path / "alpha" / file.path).read_bytes()
        assert (file.data, file.size, file.digest) == (data, len(data), "sha256:" + hashlib.sha256(data).hexdigest())
    assert server.skills.skills["beta"].frontmatter == {
        "name": "beta",
        "description": "The beta skill.",
        "metadata": {"team": "docs"},
    }


def test_one_skill_directory_is_a_root_too(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "solo", {"a.txt": "a"})
    server = Server("skills")
    assert server.add_skills(skill) == ["solo"]
    assert served(server) == ["skill://solo/SKILL.md", "skill://solo/a.txt"]


def test_file_names_become_uri_path_segments_percent_encoded(tmp_path: Path) -> None:
    write_skill(tmp_path, "names", {"my notes#1?.md": "x", "ünï/ok.txt": "y"})
    server = Server("skills")
    server.add_skills(tmp_path)
    assert set(served(server)) == {
        "skill://names/SKILL.md",
        "skill://names/my%20notes%231%3F.md",
        "skill://names/%C3%BCn%C3%AF/ok.txt",
    }


def test_frontmatter_both_yaml_versions_agree_on_is_served_as_json(tmp_path: Path) -> None:
    extra = 'flag: "yes"\nwhen: "2024-01-01"\nratio: 1.5\nenabled: true\ncount: 16\ntags: [a, 1, null]\n'
    write_skill(tmp_path, "typed", extra=extra)
    server = Server("skills")
    server.add_skills(tmp_path)
    assert server.skills is not None
    frontmatter = server.skills.skills["typed"].frontmatter
    assert {key: frontmatter[key] for key in ("flag", "when", "ratio", "enabled", "count", "tags")} == {
        "flag": "yes",
        "when": "2024-01-01",
        "ratio": 1.5,
        "enabled": True,
        "count": 16,
        "tags": ["a", 1, None],
    }


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("flag: yes", "frontmatter.flag"),  # 1.1: True; 1.2: "yes"
        ("on: 1", "frontmatter.on"),  # 1.1: the key is True
        ("when: 2024-01-01", "frontmatter.when"),  # 1.1: a date
        ("mode: 0755", "frontmatter.mode"),  # 1.1: octal 493; 1.2: 755
        ("duration: 1:30", "frontmatter.duration"),  # 1.1: sexagesimal 90
        ("big: 1.5e3", "frontmatter.big"),  # 1.1: a string (its exponent needs a sign); 1.2: 1500.0
        ("limit: .inf", "frontmatter.limit"),  # 1.1: infinity
        ("tags: [a, off]", "frontmatter.tags[1]"),
    ],
)
def test_frontmatter_that_yaml_1_1_and_1_2_hosts_read_differently_is_refused(
    tmp_path: Path, line: str, key: str
) -> None:
    write_skill(tmp_path, "ambiguous", extra=line + "\n")
    with pytest.raises(SkillError, match=rf"{re.escape(key)} reads differently in YAML 1.1 and 1.2.*quote"):
        Server("skills").add_skills(tmp_path)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ("# no frontmatter\n", "must begin with a '---'"),
        ("---\nname: bad\n---\n", "non-empty string description"),
        ("---\ndescription: d\n---\n", "naming rules"),
        ("---\nname: Bad--Name\ndescription: d\n---\n", "naming rules"),
        ("---\nname: other\ndescription: d\n---\n", "must equal the directory's name"),
        ("---\nname: bad\ndescription: d\ndescription: e\n---\n", "duplicate"),
        ("---\nname: bad\ndescription: &d text\nsummary: *d\n---\n", "aliases are not allowed"),
        ("---\nname: bad\ndescription: d\nmetadata: [1]\n---\n", "metadata must be a mapping"),
        ("---\nname: bad\ndescription: d\nmetadata:\n  io.modelcontextprotocol/x: y\n---\n", "reserved"),
        ("---\nname: bad\ndescription: d\n? [1, 2]\n: v\n---\n", "unhashable"),
        ("---\nname: bad\ndescription: d\n1: one\n---\n", "non-string key"),
        ("---\nname: bad\ndescription: [unclosed\n---\n", "not valid YAML"),
        ("---\n- a list\n---\n", "must be a YAML mapping"),
        ("---\nname: bad\ndescription: " + "d" * 1025 + "\n---\n", "longer than 1024"),
    ],
)
def test_frontmatter_that_breaks_the_rules_is_refused_at_load(
    tmp_path: Path, manifest: str, message: str | None
) -> None:
    directory = tmp_path / "bad"
    directory.mkdir()
    (directory / "SKILL.md").write_text(manifest)
    server = Server("skills")
    if message is None:
        server.add_skills(tmp_path)
        return
    with pytest.raises(SkillError, match=message):
        server.add_skills(tmp_path)
    assert served(server) == [] and "extensions" not in server.capabilities()  # nothing half served


def test_a_skill_md_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "SKILL.md").write_bytes(b"---\nname: bin\ndescription: \xff\n---\n")
    with pytest.raises(SkillError, match="not UTF-8"):
        load_skills(tmp_path)


def test_symlinks_leaving_the_skill_are_refused(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "root", "leaky")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (skill / "relative").symlink_to(Path("..") / ".." / "secret.txt")
    with pytest.raises(SkillError, match="outside the skill directory"):
        load_skills(tmp_path / "root")
    (skill / "relative").unlink()
    (skill / "absolute").symlink_to(outside)  # an absolute target
    with pytest.raises(SkillError, match="outside the skill directory"):
        load_skills(tmp_path / "root")
    (skill / "absolute").unlink()
    (skill / "sibling").symlink_to(tmp_path / "root" / "other" / "SKILL.md")  # into another skill: outside too
    write_skill(tmp_path / "root", "other")
    with pytest.raises(SkillError, match="outside the skill directory"):
        load_skills(tmp_path / "root")


def test_a_symlink_inside_the_skill_is_served_as_its_target(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "linked", {"real.txt": "real"})
    (skill / "alias.txt").symlink_to("real.txt")
    (skill_files,) = load_skills(tmp_path)
    contents = {file.path: file.data for file in skill_files.files}
    assert contents["alias.txt"] == contents["real.txt"] == b"real"


def test_symlinked_directories_special_files_and_nested_skills_are_refused(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "shape", {"sub/a.txt": "a"})
    (skill / "loop").symlink_to(skill / "sub")
    with pytest.raises(SkillError, match="symlinked directory"):
        load_skills(tmp_path)
    (skill / "loop").unlink()
    os.mkfifo(skill / "pipe")
    with pytest.raises(SkillError, match="not a regular file"):
        load_skills(tmp_path)
    (skill / "pipe").unlink()
    write_skill(skill / "sub", "inner")
    with pytest.raises(SkillError, match="do not nest"):
        load_skills(tmp_path)


def test_a_symlinked_skill_directory_is_refused(tmp_path: Path) -> None:
    real = write_skill(tmp_path / "elsewhere", "real")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "real").symlink_to(real)
    with pytest.raises(SkillError, match="symlinked skill directory"):
        load_skills(tmp_path / "root")


@pytest.mark.parametrize(
    ("limits", "files", "message"),
    [
        (SkillLimits(max_files_per_skill=2), {"a": "a", "b": "b"}, "max_files_per_skill"),
        (SkillLimits(max_skill_bytes=100), {"big": "x" * 80}, "max_skill_bytes"),
        (SkillLimits(max_depth=2), {"a/b/c/d.txt": "deep"}, "max_depth"),
        (SkillLimits(max_total_bytes=150), {"big": "x" * 100}, "together exceed 150"),
    ],
)
def test_limits_are_enforced_at_load(tmp_path: Path, limits: SkillLimits, files: dict[str, str], message: str) -> None:
    write_skill(tmp_path, "one", files)
    write_skill(tmp_path, "two", files)
    with pytest.raises(SkillError, match=message):
        Server("skills").add_skills(tmp_path, limits=limits)


def test_the_sep_limits_are_the_defaults_and_count_skill_md() -> None:
    limits = SkillLimits()
    assert (limits.max_files_per_skill, limits.max_skill_bytes) == (512, 16 * 1024 * 1024)
    with pytest.raises(ValueError, match="max_skills"):
        SkillLimits(max_skills=0)


def test_max_skills_counts_what_is_served_already(tmp_path: Path) -> None:
    write_skill(tmp_path / "a", "one")
    write_skill(tmp_path / "b", "two")
    server = Server("skills")
    server.add_skills(tmp_path / "a", limits=SkillLimits(max_skills=1))
    with pytest.raises(ValueError, match="over max_skills=1"):
        server.add_skills(tmp_path / "b", limits=SkillLimits(max_skills=1))
    write_skill(tmp_path / "a", "three")
    with pytest.raises(SkillError, match="more than 1 skills"):
        load_skills(tmp_path / "a", SkillLimits(max_skills=1))


def test_a_second_load_of_a_name_or_uri_needs_replace(tmp_path: Path) -> None:
    write_skill(tmp_path, "dup")
    server = Server("skills")

    @server.resource("skill://taken/SKILL.md")
    def taken() -> str:
        return "mine"

    server.add_skills(tmp_path)
    with pytest.raises(ValueError, match="already served"):
        server.add_skills(tmp_path)
    write_skill(tmp_path / "more", "taken")
    with pytest.raises(ValueError, match="already registered"):
        server.add_skills(tmp_path / "more")
    assert server.add_skills(tmp_path / "more", replace=True) == ["taken"]
    with pytest.raises(ValueError, match="page_size"):
        server.add_skills(tmp_path, replace=True, page_size=0)


def test_a_missing_or_wrong_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        Server("skills").add_skills(tmp_path / "absent")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError):
        Server("skills").add_skills(tmp_path / "file")


def test_without_pyyaml_the_error_names_the_extra(tmp_path: Path) -> None:
    write_skill(tmp_path, "needs-yaml")
    script = (
        "import sys; sys.modules['yaml'] = None\n"  # what an install without the extra looks like to an import
        "from mcpgen_runtime.server import Server\n"
        f"Server('s').add_skills({str(tmp_path)!r})\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "ImportError: serving skills needs PyYAML" in run.stderr and "mcpgen-runtime[skills]" in run.stderr
