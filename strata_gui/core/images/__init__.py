"""Image generation with stable-diffusion.cpp engines: requests, the service, the gallery.

For the Images page and ``strata image`` (``app`` is the composed ``AppServices``)::

    unsubscribe = app.images.events.subscribe(on_event)     # ImageProgress (loading / sampling step k of n,
                                                     # image i of count, fraction) and ImageNotice
                                                     # (an engine failed, the next one took the job)
    result = await app.images.generate(model, ImageRequest(prompt, negative_prompt=..., width=512,
                                       height=512, steps=20, cfg_scale=7.0, sampler="euler_a",
                                       seed=-1, count=1))
    result.images            # GalleryImage per image: .path (PNG), .request (with its real seed)
    task.cancel()            # Cancel: withdraws a queued job or stops the engine (frees it)
    app.images.gallery.images()                      # the gallery, newest first
    read_settings(png).request                       # "use these settings again" (any A1111 PNG)
    app.resolver.resolve(model, kind=IMAGE)          # which image engine runs, and why
    app.models.image_fit(entry)                      # GPU / CPU / too large (library entries with
                                                     # entry.kind is IMAGE)
    await app.dashboard.run_image_benchmark(model)   # "Benchmark this model"; .image_stats() for charts

Sampler names for ``ImageRequest.sampler`` come from the running engine (``SdJobs.samplers``);
stable-diffusion.cpp knows euler, euler_a, heun, dpm2, dpm++2s_a, dpm++2m, dpm++2mv2, ipndm,
ipndm_v, lcm, ddim_trailing, tcd, res_multistep, res_2s and er_sde (the pinned 0.4.7 build).
"""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.images.gallery import Gallery, GalleryImage, read_settings
    from strata_gui.core.images.params import ImageRequest, ParsedParameters, parse_parameters, parse_size
    from strata_gui.core.images.service import (
        ImageBenchEntry,
        ImageEvent,
        ImageNotice,
        ImageProgress,
        ImageRecord,
        ImageResult,
        ImageService,
    )

__all__ = [
    "Gallery",
    "GalleryImage",
    "ImageBenchEntry",
    "ImageEvent",
    "ImageNotice",
    "ImageProgress",
    "ImageRecord",
    "ImageRequest",
    "ImageResult",
    "ImageService",
    "ParsedParameters",
    "parse_parameters",
    "parse_size",
    "read_settings",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "gallery": ["Gallery", "GalleryImage", "read_settings"],
    "params": ["ImageRequest", "ParsedParameters", "parse_parameters", "parse_size"],
    "service": ["ImageBenchEntry", "ImageEvent", "ImageNotice", "ImageProgress", "ImageRecord", "ImageResult", "ImageService"],
})
