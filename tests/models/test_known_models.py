"""flowlib's model table (issue 27.2): AutoGen 0.7.5's known-model information in one
data file that names its source, shipped with the package."""

from __future__ import annotations

import ast
import json
import typing
from fnmatch import fnmatch
from importlib import resources
from pathlib import Path

import pytest

from flowlib.models import ModelFamily, OllamaChatCompletionClient, OpenAIChatCompletionClient
from flowlib.models._known_models import (
    DATA_FILE,
    known_models,
    lookup_context_window,
    lookup_model_info,
    lookup_ollama_context_window,
    lookup_ollama_model_info,
    table_source,
)

ROOT = Path(__file__).resolve().parents[2]

# A sample of AutoGen 0.7.5's rows, written out from its _model_info.py tables:
# name -> (vision, function_calling, json_output, family, structured_output, context).
AUTOGEN_OPENAI_SAMPLE = {
    "gpt-4o-2024-05-13": (True, True, True, "gpt-4o", False, 128000),
    "gpt-4-1106-vision-preview": (True, False, False, "gpt-4", False, 128000),
    "o1-mini-2024-09-12": (False, False, False, "o1", False, 128000),
    "o1-2024-12-17": (False, True, False, "o1", True, 200000),
    "gpt-3.5-turbo-instruct": (False, True, True, "gpt-35", False, 4096),
    "gpt-5-nano-2025-08-07": (True, True, True, "gpt-5", True, 400000),
    "gemini-1.5-flash-8b": (True, True, True, "gemini-1.5-flash", True, 1048576),
    "gemini-1.5-pro": (True, True, True, "gemini-1.5-pro", True, 2097152),
    "gemini-2.5-pro-preview-03-25": (True, True, True, "gemini-2.5-pro", True, 2097152),
    "claude-3-haiku-20240307": (True, True, False, "claude-3-haiku", False, 50000),
    "claude-opus-4-20250514": (True, True, False, "claude-4-opus", False, 200000),
    "Llama-3.3-70B-Instruct": (False, True, True, "llama-3.3-70b", False, 128000),
    "Llama-4-Maverick-17B-128E-Instruct-FP8": (True, True, True, "llama-4-maverick", True, 128000),
}
# AutoGen's pointers (short name -> dated row).
AUTOGEN_ALIAS_SAMPLE = {
    "gpt-4o": "gpt-4o-2024-08-06",
    "gpt-4-turbo-preview": "gpt-4-0125-preview",
    "claude-4-sonnet": "claude-sonnet-4-20250514",
    "llama-4-scout": "Llama-4-Scout-17B-16E-Instruct-FP8",
    "o3": "o3-2025-04-16",
}
# name -> (vision, function_calling, family, context)
AUTOGEN_OLLAMA_SAMPLE = {
    "llama3.2": (False, True, "unknown", 131072),
    "llama3.2-vision": (True, False, "unknown", 131072),
    "deepseek-r1": (False, False, "r1", 131072),
    "qwen2.5vl": (True, False, "unknown", 128000),
    "qwen3:14b": (False, True, "unknown", 40960),
    "codellama:70b": (False, False, "unknown", 2048),
    "all-minilm": (False, False, "unknown", 256),
}


@pytest.mark.parametrize("name", sorted(AUTOGEN_OPENAI_SAMPLE))
def test_openai_compatible_rows_match_autogen(name: str) -> None:
    vision, calling, json_output, family, structured, window = AUTOGEN_OPENAI_SAMPLE[name]
    info = lookup_model_info(name)
    assert info is not None
    assert (info["vision"], info["function_calling"], info["json_output"]) == (
        vision,
        calling,
        json_output,
    )
    assert (info["family"], info["structured_output"]) == (family, structured)
    assert lookup_context_window(name) == window


@pytest.mark.parametrize(("alias", "name"), sorted(AUTOGEN_ALIAS_SAMPLE.items()))
def test_aliases_resolve_as_autogens_pointers(alias: str, name: str) -> None:
    assert lookup_model_info(alias) == lookup_model_info(name)
    assert lookup_context_window(alias) == lookup_context_window(name)


@pytest.mark.parametrize("name", sorted(AUTOGEN_OLLAMA_SAMPLE))
def test_ollama_rows_match_autogen(name: str) -> None:
    vision, calling, family, window = AUTOGEN_OLLAMA_SAMPLE[name]
    info = lookup_ollama_model_info(name)
    assert info is not None
    assert (info["vision"], info["function_calling"], info["family"]) == (vision, calling, family)
    assert info["json_output"] is True and info["structured_output"] is True
    assert lookup_ollama_context_window(name) == window


def test_dated_and_suffixed_names_fall_back_to_their_base() -> None:
    assert lookup_model_info("gpt-4o-2099-01-01") == lookup_model_info("gpt-4o")
    assert lookup_model_info("claude-3-7-sonnet-latest") == lookup_model_info("claude-3-7-sonnet")
    assert lookup_model_info("gemini-2.0-flash-001") == lookup_model_info("gemini-2.0-flash")
    assert lookup_model_info("gpt-35-turbo") == lookup_model_info("gpt-3.5-turbo")  # Azure's
    assert lookup_model_info("gemini-2.5-pro") is None  # neither AutoGen nor flowlib knows it
    assert lookup_model_info("llama3.2") is None  # an Ollama name, not an OpenAI one


def test_the_data_file_names_its_source_and_is_consistent() -> None:
    data = json.loads(resources.files("flowlib.models").joinpath(DATA_FILE).read_text("utf-8"))
    assert "AutoGen 0.7.5" in data["source"] and "_model_info.py" in data["source"]
    assert table_source() == data["source"]
    families = {
        value for name, value in vars(ModelFamily).items() if name.isupper() and name != "ANY"
    }
    assert set(typing.get_args(ModelFamily.ANY)) == families
    rows = [*data["openai"]["models"].values(), *data["ollama"]["models"].values()]
    assert all(row["family"] in families for row in rows)
    for alias, target in {**data["openai"]["aliases"], **data["openai"]["flowlib_aliases"]}.items():
        assert alias in known_models(), f"alias {alias} -> {target} does not resolve"
    assert len(data["openai"]["models"]) == 51 and len(data["ollama"]["models"]) == 44


def test_the_data_file_is_package_data() -> None:
    """A plain `pip install .` ships the table (setuptools' package-data)."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = text.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    line = next(line for line in section.splitlines() if line.startswith("flowlib ="))
    patterns = ast.literal_eval(line.split("=", 1)[1].strip())
    assert any(fnmatch(f"models/{DATA_FILE}", pattern) for pattern in patterns)


async def test_clients_know_the_table_without_model_info() -> None:
    gemini = OpenAIChatCompletionClient("gemini-1.5-flash-8b", api_key="k")
    assert gemini.model_info["family"] == ModelFamily.GEMINI_1_5_FLASH
    claude = OpenAIChatCompletionClient("claude-3-5-sonnet-20241022", api_key="k")
    assert claude.model_info["json_output"] is False
    llama = OllamaChatCompletionClient(model="llama3.2")
    assert llama.model_info["function_calling"] is True
    for client in (gemini, claude, llama):
        await client.close()
