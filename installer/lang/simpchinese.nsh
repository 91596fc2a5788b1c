; Simplified Chinese strings of the Strata installer (UTF-8).
LangString SecApp ${LANG_SIMPCHINESE} "Strata（必需）"
LangString SecDesktop ${LANG_SIMPCHINESE} "桌面快捷方式"
LangString LaunchApp ${LANG_SIMPCHINESE} "启动 Strata"
LangString RemovingPrevious ${LANG_SIMPCHINESE} "正在移除旧版本（保留您的数据）..."
LangString UnSecData ${LANG_SIMPCHINESE} "同时删除我的 Strata 数据（设置、对话、引擎、日志）"
