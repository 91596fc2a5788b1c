"""``/v1/images/generations`` through the real ``openai`` client to a real CPU sd-server, started on demand."""

from __future__ import annotations

import base64
import struct

import openai
import pytest

from strata_gui.core.serve.router import KIND_IMAGE, SD_SERVER_APIS
from tests.serve.conftest import Api, run_api
from tests.support.engine_router import EngineRouter, TestModel, served
from tests.support.engines import TestEngines
from tests.support.image_model import cached_image_model

pytestmark = [pytest.mark.engine, pytest.mark.slow]

IMAGE_ID = "strata-test-sdxs512ds"


def test_image_generation_passes_through_to_sd_server(test_engines: TestEngines) -> None:
    model = cached_image_model()
    router = EngineRouter([TestModel(
        served(IMAGE_ID, KIND_IMAGE, model, family="SDXS", capabilities=["image"]), SD_SERVER_APIS,
        command=lambda port: [str(test_engines.sd_server), "--model", str(model), "--listen-ip", "127.0.0.1",
                              "--listen-port", str(port), "--steps", "1", "--threads", "2"],
        ready_path="/sdcpp/v1/capabilities")])

    async def body(api: Api) -> None:
        async with openai.AsyncOpenAI(base_url=api.base + "/v1", api_key="unused", max_retries=0) as c:
            # No model named: the only image model served answers.
            res = await c.images.generate(prompt="a red fox in the snow", size="64x64",  # type: ignore[arg-type]
                                          n=1, response_format="b64_json")
        png = base64.b64decode(res.data[0].b64_json or "")  # type: ignore[index]
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", png[16:24]) == (64, 64)
        assert router.borrows == [(IMAGE_ID, "image", None)]
        assert [r.path for r in api.recorded] == ["/v1/images/generations"]

    run_api(router, body)
