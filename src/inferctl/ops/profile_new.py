"""`profiles new NAME --from PROFILE --set key=value`: a user profile written into the config file.

Nobody hand-edits TOML to change a region or a model: the new profile starts from a shipped one (written as
``base = "..."`` plus the changed keys, so it follows the shipped profile's updates) or from one of the config
file's (copied, then changed). It is validated like `deploy` validates (fields, platform rules, the planner's fit
check) before anything is written, and the config file is only ever appended to: comments and layout stay.
"""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from typing import Any

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError

# Cloud Run service and GCE instance names: lowercase letters, digits and hyphens, starting with a letter.
NAME = re.compile(r"[a-z](?:[a-z0-9-]{0,47}[a-z0-9])?")
KEY = re.compile(r"[A-Za-z0-9_-]+")


class NewProfile(BaseModel):
    name: str
    based_on: str = Field(description="The profile it started from.")
    config_file: str = Field(description="The config file the profile was appended to.")
    table: dict[str, Any] = Field(description="What was written under [profiles.NAME].")
    fit: str | None = Field(default=None, description="The planner's fit verdict.")
    warnings: list[str] = Field(default_factory=list, description="Validation warnings.")


def parse_sets(sets: list[str]) -> dict[str, Any]:
    """``["region=europe-west4", "vllm.max_model_len=16384"]`` as nested overrides; values are TOML values
    (16384, true, 0.9, ["a"]) or, when they are not, plain strings (europe-west4, vllm/vllm-openai:v0.26.0)."""
    out: dict[str, Any] = {}
    for item in sets:
        key, sep, text = item.partition("=")
        key = key.strip()
        parts = key.split(".")
        if not sep or not key or not all(KEY.fullmatch(p) for p in parts):
            raise ConfigError(f"--set takes key=value with a dotted key such as vllm.max_model_len=16384 "
                              f"(got {item!r}).")
        if parts[0] in ("name", "base"):
            raise ConfigError(f"--set cannot change '{parts[0]}': the name is NAME and the base is --from.")
        try:
            value = tomllib.loads(f"v = {text.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            value = text.strip()
        node = out
        for p in parts[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {key}: '{p}' is set to a value and to a table.")
        node[parts[-1]] = value
    return out


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ConfigError(f"{v} cannot be written to the config file.")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # a JSON string is a TOML basic string
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise ConfigError(f"{v!r} cannot be written to the config file.")


def _key(k: str) -> str:
    return k if KEY.fullmatch(k) else json.dumps(k, ensure_ascii=False)


def toml_table(name: str, table: dict[str, Any]) -> str:
    """``[profiles.NAME]`` with one ``dotted.key = value`` line per leaf (sub-tables as dotted keys)."""
    lines = [f"[profiles.{name}]"]

    def walk(prefix: str, node: dict[str, Any]) -> None:
        for k, v in node.items():
            path = f"{prefix}{_key(k)}"
            if isinstance(v, dict) and v:
                walk(path + ".", v)
            else:
                lines.append(f"{path} = {toml_value(v)}")

    walk("", table)
    return "\n".join(lines) + "\n"


def new_profile(name: str, source: str, sets: list[str] | None = None) -> NewProfile:
    """Validate the profile ``source`` + ``sets`` as ``name`` and append it to the config file."""
    from inferctl.config import config_path
    from inferctl.ops.profiles import check_profile
    from inferctl.profiles.profile import list_profiles, load_profile, parse_profile, profile_file

    if not NAME.fullmatch(name):
        raise ConfigError(f"Profile names are lowercase letters, digits and hyphens, start with a letter and have "
                          f"at most 49 characters (they name the Cloud Run service or VM); got {name!r}.")
    shipped_only = {p.name: shipped for p, shipped in list_profiles()}
    if name in shipped_only:
        raise ConfigError(f"Profile '{name}' already exists; choose another name.")
    load_profile(source)  # an unknown --from is its own sentence
    overrides = parse_sets(sets or [])
    path = config_path()
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if shipped_only[source]:
        table: dict[str, Any] = {"base": source, **overrides}
    else:  # a config-file profile: copy its own table (with its base, if any)
        table = merge(tomllib.loads(text)["profiles"][source], overrides)
    resolved = dict(table)
    if "base" in resolved:
        base_file = profile_file(resolved.pop("base"))
        if base_file is None:
            raise ConfigError(f"Profile '{source}' has a base that is not a shipped profile.")
        resolved = merge(tomllib.loads(base_file.read_text(encoding="utf-8")), resolved)
    profile = parse_profile(name, resolved)
    report = check_profile(profile)  # every check plus the planner's fit check
    if report.errors:
        raise ConfigError(f"Profile '{name}' would not deploy, so it was not written: {report.errors[0]}")
    addition = ("\n" if text and not text.endswith("\n") else "") + ("\n" if text else "") + toml_table(name, table)
    new_text = text + addition
    try:  # the file as it will be must read back to exactly this profile
        written = tomllib.loads(new_text)["profiles"][name]
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise ConfigError(f"Cannot add [profiles.{name}] to {path}: {exc}.") from None
    if written != table:
        raise ConfigError(f"Cannot add [profiles.{name}] to {path}: it would not read back as written.")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(new_text, encoding="utf-8")
    os.replace(tmp, path)
    return NewProfile(name=name, based_on=source, config_file=str(path), table=table, fit=report.fit,
                      warnings=report.warnings)
