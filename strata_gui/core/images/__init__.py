"""Image generation with stable-diffusion.cpp engines: requests, the service, the gallery, image models."""

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
