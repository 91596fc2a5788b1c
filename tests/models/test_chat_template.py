"""The template reader against every chat template of the pinned llama.cpp source, and its rules.

The table below is what each real template supports, checked by reading the template (see each
rule in ``strata_gui/core/models/chat_template.py``). A template added to the pinned source fails
``test_the_table_covers_every_template_of_the_pinned_source`` until it is read and added here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from strata_gui.core.base.errors import GGUFError
from strata_gui.core.models import gguf_meta
from strata_gui.core.models.chat_template import (
    TemplateCapabilities,
    read_chat_template,
    template_capabilities,
)
from tests.support import gguf_model, gguf_reference
from tests.support.engines import locate_source

THINK = ("<think>", "</think>")
HARMONY = ("<|channel|>analysis<|message|>", "<|end|>")


def caps(**kw: Any) -> TemplateCapabilities:
    """Expected capabilities; a thinking switch is boolean (off = False) unless given."""
    if kw.get("thinking_toggle") and "thinking_off" not in kw:
        kw["thinking_off"] = False
    return TemplateCapabilities(**kw)


EXPECTED: dict[str, TemplateCapabilities] = {
    'Apertus-8B-Instruct': caps(thinking=True, thinking_tags=('<|inner_prefix|>', '<|inner_suffix|>'),
        thinking_toggle='enable_thinking', tools=True, tool_calls=True),
    'Apriel-1.6-15b-Thinker-fixed': caps(thinking=True,
        thinking_tags=('Here are my reasoning steps:\n', '[BEGIN FINAL RESPONSE]'), opens_thinking=True,
        tools=True, tool_calls=True, reasoning_field='reasoning_content'),
    'Bielik-11B-v3.0-Instruct': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True, keeps_past_reasoning=True,
        reasoning_field='reasoning_content'),
    'ByteDance-Seed-OSS': caps(thinking=True, thinking_tags=('<seed:think>', '</seed:think>'),
        thinking_toggle='thinking_budget', thinking_off=0, tools=True, tool_calls=True,
        keeps_past_reasoning=True, reasoning_field='reasoning_content'),
    'Cohere2MoE': caps(thinking=True, thinking_tags=('<|START_THINKING|>', '<|END_THINKING|>'),
        opens_thinking=True, thinking_toggle='reasoning', effort='reasoning_effort',
        effort_levels=('none',), tools=True, tool_calls=True, keeps_past_reasoning=True,
        reasoning_field='reasoning_content'),
    'CohereForAI-c4ai-command-r-plus-tool_use': caps(tools=True, tool_calls=True),
    'CohereForAI-c4ai-command-r7b-12-2024-tool_use': caps(thinking=True,
        thinking_tags=('<|START_THINKING|>', '<|END_THINKING|>'), thinking_toggle='enable_thinking',
        tools=True, tool_calls=True, keeps_past_reasoning=True, reasoning_field='reasoning_content'),
    'GLM-4.6': caps(thinking=True, thinking_tags=THINK, thinking_toggle='enable_thinking', tools=True,
        tool_calls=True, reasoning_field='reasoning_content'),
    'GLM-4.7-Flash': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True, reasoning_history='clear_thinking',
        reasoning_field='reasoning_content'),
    'GigaChat3-10B-A1.8B': caps(tools=True, tool_calls=True),
    'GigaChat3.1-10B-A1.8B': caps(tools=True, tool_calls=True),
    'HuggingFaceTB-SmolLM3-3B': caps(thinking=True, thinking_tags=THINK, thinking_toggle='enable_thinking',
        prompt_switches=('/no_think', '/think')),
    'Kimi-K2-Instruct': caps(tools=True, tool_calls=True),
    'Kimi-K2-Thinking': caps(thinking=True, thinking_tags=THINK, tools=True, tool_calls=True,
        reasoning_field='reasoning_content'),
    'Kimi-K3': caps(thinking=True, thinking_tags=('<|open|>think<|sep|>', '<|close|>think<|sep|>'),
        opens_thinking=True, thinking_toggle='thinking', effort='thinking_effort',
        effort_levels=('max', 'low', 'high'), tools=True, tool_calls=True, keeps_past_reasoning=True,
        reasoning_field='reasoning_content'),
    'LFM2-8B-A1B': caps(tools=True),
    'LFM2.5-8B-A1B': caps(thinking=True, thinking_tags=THINK, tools=True, tool_calls=True,
        reasoning_history='preserve_thinking', reasoning_field='thinking'),
    'LFM2.5-Instruct': caps(thinking=True, thinking_tags=THINK, tools=True,
        reasoning_history='keep_past_thinking'),
    'MiMo-VL': caps(tools=True, tool_calls=True),
    'MiniMax-M1': caps(tools=True, tool_calls=True),
    'MiniMax-M2': caps(thinking=True, thinking_tags=THINK, opens_thinking=True, tools=True, tool_calls=True,
        reasoning_field='reasoning_content'),
    'MiniMax-M3': caps(thinking=True, thinking_tags=('<mm:think>', '</mm:think>'), opens_thinking=True,
        thinking_toggle='thinking_mode', thinking_off='disabled', tools=True, tool_calls=True,
        keeps_past_reasoning=True, reasoning_field='reasoning_content'),
    'Mistral-Small-3.2-24B-Instruct-2506': caps(tools=True, tool_calls=True, alternating_roles=True,
        tool_call_id_length=9),
    'NVIDIA-Nemotron-3-Nano-30B-A3B-BF16': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True,
        reasoning_history='truncate_history_thinking', reasoning_field='reasoning_content'),
    'NVIDIA-Nemotron-Nano-v2': caps(thinking=True, thinking_tags=THINK, opens_thinking=True, tools=True,
        tool_calls=True, prompt_switches=('/think', '/no_think')),
    'NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use': caps(tools=True, tool_calls=True),
    'NousResearch-Hermes-3-Llama-3.1-8B-tool_use': caps(tools=True, tool_calls=True),
    'Qwen-QwQ-32B': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True),
    'Qwen-Qwen2.5-7B-Instruct': caps(tools=True, tool_calls=True),
    'Qwen-Qwen3-0.6B': caps(thinking=True, thinking_tags=THINK, thinking_toggle='enable_thinking',
        tools=True, tool_calls=True, reasoning_field='reasoning_content'),
    'Qwen3-Coder': caps(tools=True, tool_calls=True),
    'Qwen3.5-4B': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True,
        reasoning_field='reasoning_content'),
    'Reka-Edge': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True,
        reasoning_field='reasoning_content'),
    'Spark2.5': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True, keeps_past_reasoning=True,
        reasoning_field='reasoning_content'),
    'StepFun3.5-Flash': caps(thinking=True, thinking_tags=THINK, opens_thinking=True, tools=True,
        tool_calls=True, reasoning_field='reasoning_content'),
    'deepseek-ai-DeepSeek-R1-Distill-Llama-8B': caps(thinking=True, thinking_tags=THINK,
        opens_thinking=True, tool_calls=True),
    'deepseek-ai-DeepSeek-R1-Distill-Qwen-32B': caps(thinking=True, thinking_tags=THINK,
        opens_thinking=True, thinking_toggle='enable_thinking', tool_calls=True),
    'deepseek-ai-DeepSeek-V3.1': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tool_calls=True),
    'deepseek-ai-DeepSeek-V3.2': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True,
        reasoning_field='reasoning_content'),
    'deepseek-ai-DeepSeek-V4-Flash-0731': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', effort='reasoning_effort', effort_levels=('high', 'max'),
        tools=True, tool_calls=True, reasoning_history='drop_thinking',
        reasoning_field='reasoning_content'),
    'deepseek-ai-DeepSeek-V4': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', effort='reasoning_effort', effort_levels=('max',), tools=True,
        tool_calls=True, reasoning_history='drop_thinking', reasoning_field='reasoning_content'),
    'fireworks-ai-llama-3-firefunction-v2': caps(tool_calls=True),
    'google-gemma-2-2b-it': caps(system_role=False, alternating_roles=True),
    'google-gemma-4-31B-it-interleaved': caps(thinking=True,
        thinking_tags=('<|channel>thought', '<channel|>'), thinking_toggle='enable_thinking', tools=True,
        tool_calls=True, reasoning_field='reasoning_content'),
    'google-gemma-4-31B-it': caps(thinking=True, thinking_tags=('<|channel>thought', '<channel|>'),
        thinking_toggle='enable_thinking', tools=True, tool_calls=True,
        reasoning_field='reasoning_content'),
    'ibm-granite-granite-3.3-2B-Instruct': caps(thinking=True, thinking_tags=THINK,
        thinking_toggle='thinking', tools=True),
    'ibm-granite-granite-4.0': caps(tools=True, tool_calls=True),
    'ibm-granite-granite-4.1': caps(tools=True, tool_calls=True),
    'inclusionai-ling-3.0-flash': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True, keeps_past_reasoning=True,
        reasoning_field='reasoning_content'),
    'llama-cpp-deepseek-r1': caps(thinking=True, thinking_tags=THINK, opens_thinking=True, tools=True,
        tool_calls=True),
    'llama-cpp-rwkv-world': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking'),
    'llm-jp-llm-jp-4.1-8b-thinking': caps(thinking=True, thinking_tags=HARMONY, effort='reasoning_effort',
        effort_levels=('medium',), tools=True, tool_calls=True, reasoning_field='thinking'),
    'meetkai-functionary-medium-v3.1': caps(tools=True, tool_calls=True),
    'meetkai-functionary-medium-v3.2': caps(tools=True, tool_calls=True),
    'meta-llama-Llama-3.1-8B-Instruct': caps(tools=True, tool_calls=True, single_tool_call=True),
    'meta-llama-Llama-3.2-3B-Instruct': caps(tools=True, tool_calls=True, single_tool_call=True),
    'meta-llama-Llama-3.3-70B-Instruct': caps(tools=True, tool_calls=True, single_tool_call=True),
    'microsoft-Phi-3.5-mini-instruct': caps(),
    'mistralai-Ministral-3-14B-Reasoning-2512': caps(thinking=True, thinking_tags=('[THINK]', '[/THINK]'),
        tools=True, tool_calls=True, keeps_past_reasoning=True, reasoning_field='thinking',
        alternating_roles=True),
    'mistralai-Mistral-Nemo-Instruct-2407': caps(tools=True, tool_calls=True, alternating_roles=True,
        tool_call_id_length=9),
    'moonshotai-Kimi-K2': caps(tools=True, tool_calls=True),
    'muse-glimmer': caps(thinking=True, thinking_tags=('<|start|>assistant to=self<|message|>', '<|eom|>'),
        effort='reasoning_strength', effort_levels=('high',), tools=True, tool_calls=True,
        keeps_past_reasoning=True, reasoning_field='reasoning_content'),
    'openai-gpt-oss-120b': caps(thinking=True, thinking_tags=HARMONY, effort='reasoning_effort',
        effort_levels=('medium',), tools=True, tool_calls=True, reasoning_field='thinking'),
    'openbmb-MiniCPM5-1B': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True,
        reasoning_field='reasoning_content'),
    'poolside-Laguna-S-2.1': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True, keeps_past_reasoning=True,
        reasoning_history='preserve_thinking', reasoning_field='reasoning_content'),
    'poolside-Laguna-XS-2.1': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True, keeps_past_reasoning=True,
        reasoning_field='reasoning_content'),
    'poolside-Laguna-XS.2': caps(thinking=True, thinking_tags=THINK, opens_thinking=True,
        thinking_toggle='enable_thinking', tools=True, tool_calls=True, keeps_past_reasoning=True,
        reasoning_field='reasoning_content'),
    'tencent-Hy3': caps(thinking=True, thinking_tags=('<think:opensource>', '</think:opensource>'),
        opens_thinking=True, effort='reasoning_effort', effort_levels=('no_think', 'high', 'low'),
        tools=True, tool_calls=True, reasoning_history='preserved_thinking',
        reasoning_field='reasoning_content'),
    'unsloth-Apriel-1.5': caps(thinking=True, thinking_tags=('<thinking>', '</thinking>'), tools=True,
        tool_calls=True, reasoning_field='thought'),
    'unsloth-mistral-Devstral-Small-2507': caps(tools=True, tool_calls=True),
    'upstage-Solar-Open-100B': caps(thinking=True, thinking_tags=('<|think|>', '<|end|>'),
        effort='reasoning_effort', effort_levels=('high', 'low', 'minimal'), tools=True, tool_calls=True,
        reasoning_history='think_render_option', reasoning_field='reasoning'),
}


def _templates_dir() -> Path:
    return locate_source() / "models" / "templates"


def test_the_table_covers_every_template_of_the_pinned_source() -> None:
    names = {p.stem for p in _templates_dir().glob("*.jinja")}
    assert len(names) >= 70
    assert names == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_what_each_real_template_supports(name: str) -> None:
    template = (_templates_dir() / f"{name}.jinja").read_text(encoding="utf-8")
    assert template_capabilities(template) == EXPECTED[name]


# --------------------------------------------------------------------------- the rules, one by one

CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def test_a_template_that_knows_nothing_of_thinking_or_tools() -> None:
    assert template_capabilities(CHATML + "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}") \
        == TemplateCapabilities()


@pytest.mark.parametrize(("generation", "opens"), [
    ("{{ '<|im_start|>assistant\\n<think>\\n' }}", True),  # QwQ, the R1 distills
    ("{{ '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' }}", False),  # Qwen3 with thinking off
    ("<|assistant|>{{ '</think>' if not enable_thinking else '<think>' }}", True),  # GLM-4.7: either branch
    ("<|assistant|>{{ '\\n<think></think>' if not enable_thinking else '' }}", False),  # GLM-4.6
    ("{% if enable_thinking %}<think>{% else %}<think></think>{% endif %}", True),  # raw text
    ("{{ think_start + 'plan' + think_end }}", False),  # markers named once as variables
    ("{% set ns.out = ns.out ~ 'assistant: <think>\\n' %}", True),  # Reka builds its prompt in a set
])
def test_opens_thinking_reads_the_generation_prompt_block(generation: str, opens: bool) -> None:
    template = ("{% set think_start = '<think>' %}{% set think_end = '</think>' %}" + CHATML
                + "{% if add_generation_prompt %}" + generation + "{% endif %}")
    result = template_capabilities(template)
    assert result.thinking_tags == THINK
    assert result.opens_thinking is opens


def test_an_open_think_tag_outside_the_generation_prompt_does_not_count() -> None:
    template = ("{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}"
                "{% for m in messages %}{% if m.role == 'assistant' %}<think>{{ m.content }}{% endif %}"
                "{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
    assert template_capabilities(template).opens_thinking is False


def test_markers_named_through_format_and_variables_are_found() -> None:
    template = ("{%- set SUFFIX = ':x' %}{%- set think_begin = '<think{}>'.format(SUFFIX) %}"
                "{%- set think_end = '</think{}>'.format(SUFFIX) %}" + CHATML
                + "{% if add_generation_prompt %}{{ 'A:' + think_begin }}{% endif %}")
    result = template_capabilities(template)
    assert result.thinking_tags == ("<think:x>", "</think:x>")
    assert result.opens_thinking is True


def test_the_thinking_switch_is_a_free_variable_not_a_field_or_an_argument() -> None:
    assert template_capabilities("{% if enable_thinking %}x{% endif %}").thinking_toggle == "enable_thinking"
    # Nemotron Nano v2 keeps its own flag in a namespace, switched by /no_think in the system prompt.
    nemotron = ("{% set ns = namespace(enable_thinking=true) %}"
                "{% if '/no_think' in messages[0].content %}{% set ns.enable_thinking = false %}{% endif %}")
    result = template_capabilities(nemotron)
    assert result.thinking_toggle is None
    assert result.prompt_switches == ("/no_think",)
    # A name the template always sets itself is not a switch.
    assert template_capabilities("{% set thinking = true %}{% if thinking %}x{% endif %}").thinking_toggle is None
    # ... but "set it if the caller did not" is.
    assert template_capabilities(
        "{% set enable_thinking = enable_thinking | default(false) %}{{ enable_thinking }}"
    ).thinking_toggle == "enable_thinking"


def test_a_mode_switch_names_its_off_value() -> None:
    template = ("{% if thinking_mode is defined and thinking_mode == 'disabled' %}</mm:think>"
                "{% elif thinking_mode == 'enabled' %}<mm:think>{% endif %}")
    result = template_capabilities(template)
    assert (result.thinking_toggle, result.thinking_off) == ("thinking_mode", "disabled")


def test_effort_levels_are_the_values_the_template_names_in_order() -> None:
    template = ("{%- if not reasoning_effort is defined %}{%- set reasoning_effort = 'no_think' %}"
                "{%- elif reasoning_effort not in ['high', 'low', 'no_think'] %}{{ raise_exception('bad') }}"
                "{%- endif %}{% if reasoning_effort == 'max' %}!{% endif %}")
    result = template_capabilities(template)
    assert result.effort == "reasoning_effort"
    assert result.effort_levels == ("no_think", "high", "low", "max")
    assert result.thinking is True


LOOP = ("{%- set ns = namespace(last_user_index=-1) %}"
        "{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last_user_index = loop.index0 %}"
        "{%- endif %}{%- endfor %}{%- for m in messages %}{%- if m.role == 'assistant' %}")


@pytest.mark.parametrize(("body", "keeps", "history"), [
    # Every turn's reasoning is rendered.
    ("{{ '<think>' + m.reasoning_content + '</think>' }}", True, None),
    # Only turns after the last user message (Qwen3, GLM-4.6, MiniMax-M2).
    ("{% if loop.index0 > ns.last_user_index %}{{ '<think>' + m.reasoning_content + '</think>' }}{% endif %}",
     False, None),
    # ... unless the caller passes a history switch (GLM-4.7).
    ("{% if (clear_thinking is defined and not clear_thinking) or loop.index0 > ns.last_user_index %}"
     "{{ m.reasoning_content }}{% endif %}", False, "clear_thinking"),
    # Through a variable set from the field, limited where it is printed (Qwen3).
    ("{% set rc = m.reasoning_content %}{% if loop.index0 > ns.last_user_index %}{{ rc }}{% endif %}",
     False, None),
    # Through a variable limited where it is set (Hunyuan).
    ("{% if loop.index0 > ns.last_user_index %}{% set c = '<think>' + m.reasoning_content %}{% else %}"
     "{% set c = '' %}{% endif %}{{ c + m.content }}", False, None),
    # A switch nobody sets is off unless passed (Apriel 1.5's add_thoughts).
    ("{% if add_thoughts and m.thought %}{{ m.thought }}{% endif %}", False, None),
])
def test_keeps_past_reasoning(body: str, keeps: bool, history: str | None) -> None:
    result = template_capabilities(LOOP + body + "{%- endif %}{%- endfor %}")
    assert result.keeps_past_reasoning is keeps
    assert result.reasoning_history == history


def test_a_history_switch_the_template_sets_true_keeps_reasoning() -> None:
    # inclusionAI Ling 3: "preserved_thinking or after the last query", with preserved_thinking = true.
    template = ("{% set preserved_thinking = true %}" + LOOP
                + "{% if preserved_thinking or loop.index0 > ns.last_user_index %}{{ m.reasoning_content }}"
                  "{% endif %}{%- endif %}{%- endfor %}")
    assert template_capabilities(template).keeps_past_reasoning is True


def test_refusals_the_app_must_respect() -> None:
    gemma2 = ("{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
              "{% endif %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
              "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}")
    result = template_capabilities(gemma2)
    assert result.system_role is False
    assert result.alternating_roles is True
    mistral = "{{ raise_exception(\"Tool call IDs should be alphanumeric strings with length 9!\") }}"
    assert template_capabilities(mistral).tool_call_id_length == 9
    llama = "{{- raise_exception(\"This model only supports single tool-calls at once!\") }}"
    assert template_capabilities(llama).single_tool_call is True


def test_tools_and_tool_calls() -> None:
    assert template_capabilities("{% for t in tools %}{{ t | tojson }}{% endfor %}").tools is True
    assert template_capabilities("{% if message.tool_calls %}x{% endif %}").tool_calls is True
    # The word in a string is not a read.
    assert template_capabilities("{{ 'use the tools you have' }}").tools is False


# --------------------------------------------------------------------------- reading it from a GGUF


def test_the_template_is_read_from_a_gguf_header(test_model: Path) -> None:
    assert read_chat_template(test_model) == gguf_model.CHATML_TEMPLATE
    assert gguf_reference.read_local(test_model).chat_template == gguf_model.CHATML_TEMPLATE


def test_a_bpe_model_s_template_is_read_past_its_vocabulary(tmp_path: Path) -> None:
    template = (_templates_dir() / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8")
    path = gguf_model.write_model(tmp_path / "qwen.gguf", gguf_model.ModelSpec(
        vocab="qwen2", chat_template=template, tie_embeddings=True, embedding_type="Q4_0"))
    assert read_chat_template(path) == template
    assert gguf_meta.read_string_field(path, "tokenizer.ggml.pre") == "qwen2"
    assert gguf_meta.read_string_field(path, "no.such.key") is None


def test_a_damaged_file_says_so(tmp_path: Path, broken_models: dict[str, Path]) -> None:
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_chat_template(broken_models["bad_magic"])
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(broken_models["truncated"].read_bytes()[:5000])
    with pytest.raises(GGUFError, match=r"cut\.gguf is (damaged or )?incomplete"):
        read_chat_template(cut)
    empty = tmp_path / "empty.gguf"
    empty.write_bytes(b"")
    with pytest.raises(GGUFError, match="empty"):
        read_chat_template(empty)
