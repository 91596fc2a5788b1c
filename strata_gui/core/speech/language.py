"""Which language whisper is asked to hear."""

from __future__ import annotations

# The languages whisper models know (whisper.cpp's g_lang table), by their ISO 639-1 codes.
WHISPER_LANGUAGES = frozenset(["en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it", "id", "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur", "hr", "bg", "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn", "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si", "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo", "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln", "ha", "ba", "jw", "su", "yue"])
AUTO = "auto"


def spoken_language(choice: str, app_language: str) -> str:
    """The language code to ask whisper for.

    Args:
        choice: The user's pick ("" = follow the app, "auto" = let the engine detect it).
        app_language: The app's language as a locale name ("en_US", "zh_CN"); "" when unknown.
    """
    if choice:
        return choice
    code = app_language.replace("-", "_").split("_")[0].lower()
    return code if code in WHISPER_LANGUAGES else AUTO
