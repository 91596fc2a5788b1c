"""The public surface of ``strata_gui.core.models``: what the UI and the CLI may import."""

from typing import TYPE_CHECKING

from strata_gui.core.base.lazy import lazy_exports

if TYPE_CHECKING:
    from strata_gui.core.models.chat_template import (
        TemplateCapabilities,
        read_chat_template,
        template_capabilities,
    )
    from strata_gui.core.models.download_manager import (
        DownloadEvent,
        JobFinished,
        JobProgress,
        JobStateChanged,
    )
    from strata_gui.core.models.downloads import DownloadJob, DownloadState
    from strata_gui.core.models.fit import MOST_AUTO_SLOTS, FitEstimate, ModelShape, Verdict
    from strata_gui.core.models.gguf_meta import format_params, metadata_summary
    from strata_gui.core.models.hub import SORTS, ModelDetail, RepoSummary, SearchPage
    from strata_gui.core.models.hub_config import environment_endpoint
    from strata_gui.core.models.hub_images import ImageVariantFit, MissingPart
    from strata_gui.core.models.image_models import ImageFit, ImageModelParts, model_parts
    from strata_gui.core.models.library import LibraryEntry
    from strata_gui.core.models.load_options import (
        CACHE_TYPES,
        EFFORTS,
        FLASH_ATTENTION,
        THINKING,
        LoadOptions,
        LoadOptionsService,
    )
    from strata_gui.core.models.service import FitReport, ImageReport, ModelService
    from strata_gui.core.models.starters import (
        STARTERS_FILE,
        StarterFit,
        StarterModel,
        judge_starters,
        load_starters,
        recommend,
    )

__all__ = [
    "CACHE_TYPES",
    "EFFORTS",
    "FLASH_ATTENTION",
    "MOST_AUTO_SLOTS",
    "SORTS",
    "STARTERS_FILE",
    "THINKING",
    "DownloadEvent",
    "DownloadJob",
    "DownloadState",
    "FitEstimate",
    "FitReport",
    "ImageFit",
    "ImageModelParts",
    "ImageReport",
    "ImageVariantFit",
    "JobFinished",
    "JobProgress",
    "JobStateChanged",
    "LibraryEntry",
    "LoadOptions",
    "LoadOptionsService",
    "MissingPart",
    "ModelDetail",
    "ModelService",
    "ModelShape",
    "RepoSummary",
    "SearchPage",
    "StarterFit",
    "StarterModel",
    "TemplateCapabilities",
    "Verdict",
    "environment_endpoint",
    "format_params",
    "judge_starters",
    "load_starters",
    "metadata_summary",
    "model_parts",
    "read_chat_template",
    "recommend",
    "template_capabilities",
]

# Each module loads when one of its names is first read (see strata_gui.core.base.lazy).
__getattr__, __dir__ = lazy_exports(__name__, {
    "chat_template": ["TemplateCapabilities", "read_chat_template", "template_capabilities"],
    "download_manager": ["DownloadEvent", "JobFinished", "JobProgress", "JobStateChanged"],
    "downloads": ["DownloadJob", "DownloadState"],
    "fit": ["MOST_AUTO_SLOTS", "FitEstimate", "ModelShape", "Verdict"],
    "gguf_meta": ["format_params", "metadata_summary"],
    "hub": ["SORTS", "ModelDetail", "RepoSummary", "SearchPage"],
    "hub_config": ["environment_endpoint"],
    "hub_images": ["ImageVariantFit", "MissingPart"],
    "image_models": ["ImageFit", "ImageModelParts", "model_parts"],
    "library": ["LibraryEntry"],
    "load_options": ["CACHE_TYPES", "EFFORTS", "FLASH_ATTENTION", "THINKING", "LoadOptions", "LoadOptionsService"],
    "service": ["FitReport", "ImageReport", "ModelService"],
    "starters": ["STARTERS_FILE", "StarterFit", "StarterModel", "judge_starters", "load_starters", "recommend"],
})
