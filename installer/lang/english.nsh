; English strings of the Strata installer (UTF-8).
LangString SecApp ${LANG_ENGLISH} "Strata (required)"
LangString SecDesktop ${LANG_ENGLISH} "Desktop shortcut"
LangString LaunchApp ${LANG_ENGLISH} "Launch Strata"
LangString RemovingPrevious ${LANG_ENGLISH} "Removing the previous version (your data is kept)..."
LangString UnSecData ${LANG_ENGLISH} "Also remove my Strata data (settings, chats, engines, logs)"
