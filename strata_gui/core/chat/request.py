"""What a reply asks of the engine: the conversation's settings over the model's, spelled the way
the model's chat template reads them."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from strata_gui.core.models.load_options import EFFORTS, LoadOptions
from strata_gui.core.runtime.client import DEFAULT_MAX_TOKENS, RequestOptions

from .events import TemplateInfo
from .model import ChatModel
from .records import Conversation


class RequestBuilder:
    """What a reply in a conversation asks of the chat's model.

    Args:
        chat_model: The model that answers (its saved options; none for a remote engine).

    Attributes:
        extra: Server-specific fields sent with every request as they are (llama-server's
            logit_bias, grammar, ...).
    """

    def __init__(self, chat_model: ChatModel) -> None:
        self.chat_model = chat_model
        self.extra: dict[str, Any] = {}

    def options(self, conv: Conversation) -> RequestOptions:
        """See :func:`request_options` (with the chat model's options).

        Raises:
            ChatError: The conversation's JSON schema is not valid.
        """
        return request_options(conv, self.chat_model.reply_options(), self.extra)


def request_options(conv: Conversation, model: LoadOptions, extra: Mapping[str, Any]) -> RequestOptions:
    """What a reply in ``conv`` asks of the engine: the conversation's thinking settings over the
    model's (``model``: its saved options), its structured output, the output limit (the
    conversation's "Max tokens", else the model's limit, else
    :data:`~strata_gui.core.runtime.client.DEFAULT_MAX_TOKENS`), and the server-specific ``extra``
    fields sent as they are.

    Raises:
        ChatError: The conversation's JSON schema is not valid.
    """
    mine = conv.thinking
    enabled = mine.enabled if mine.enabled is not None else {"on": True, "off": False}.get(model.thinking)
    effort = mine.effort or (model.effort or None)
    budget = mine.budget if mine.budget is not None else (model.thinking_budget if model.thinking_budget >= 0
                                                          else None)
    limit = conv.sampling.max_tokens or model.max_output_tokens or DEFAULT_MAX_TOKENS
    return RequestOptions(thinking=enabled, effort=effort if effort in EFFORTS else None,  # type: ignore[arg-type]
                          thinking_budget=budget, response_format=conv.structured_output.response_format(),
                          max_tokens=limit, extra=dict(extra))


def for_template(options: RequestOptions, template: TemplateInfo | None) -> RequestOptions:
    """``options`` with thinking and effort spelled the way the model's template reads them.

    The client sends ``chat_template_kwargs.enable_thinking`` and ``reasoning_effort`` (which
    llama-server also maps to ``enable_thinking``); a template with another switch (``thinking``,
    ``reasoning``, ``thinking_mode``, ``thinking_budget``) or another effort name gets it under its own
    name, with the value it takes for "off". "On" is sent only to a true/false switch: for the
    others the template's own default is the "on" (a mode name or a budget Strata cannot guess).
    """
    if template is None:
        return options
    toggle, off, effort_key = template.thinking_toggle, template.thinking_off, template.effort
    thinking = options.thinking
    kwargs: dict[str, Any] = {}
    if thinking is not None and toggle is not None and toggle != "enable_thinking":
        if thinking is False:
            kwargs[toggle] = off
        elif isinstance(off, bool):
            kwargs[toggle] = True
        thinking = None  # not the client's enable_thinking, which this template does not read
    effort = options.effort
    if effort is not None and options.thinking is not False and effort_key is not None \
            and effort_key != "reasoning_effort":
        kwargs[effort_key] = effort
        effort = None
    if not kwargs:
        return dataclasses.replace(options, thinking=thinking)
    if thinking is not None:
        kwargs["enable_thinking"] = thinking  # the client's spelling, which ``extra`` now carries
    extra = dict(options.extra)
    extra["chat_template_kwargs"] = {**dict(extra.get("chat_template_kwargs") or {}), **kwargs}
    if options.thinking is False:
        extra["reasoning_effort"] = "none"
        effort = None
    # Spelled out in ``extra`` now: the client's own spelling would overwrite it.
    return dataclasses.replace(options, thinking=None, effort=effort, extra=extra)
