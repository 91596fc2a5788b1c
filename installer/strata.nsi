; Strata installer: per-user (no admin rights), NSIS 3 with the Modern UI 2.
; Compiles on Windows and on Linux (Debian's nsis package); scripts/build-installer.sh runs it.
;
; Defines passed with -D (all required):
;   VERSION       product version, e.g. 0.1.0
;   VERSION_QUAD  four numbers for the file version resource, e.g. 0.1.0.0
;   PAYLOAD       the PyInstaller bundle folder (dist/Strata)
;   OUTFILE       path of the installer to write
; Optional: COMPRESSOR (lzma, the default, or zlib/bzip2).
;
; makensis runs from this folder, so relative paths below are relative to installer/.
;
; Silent use:  Strata-Setup.exe /S [/NODESKTOP] [/D=C:\path]     uninstall.exe /S [/PURGE]
; /PURGE also removes the user's Strata data (kept by default, as in the uninstaller's checkbox).

Unicode true
ManifestDPIAware true
; COMPRESSOR=zlib gives a quick, larger build for CI checks; releases use the default lzma.
!ifndef COMPRESSOR
  !define COMPRESSOR lzma
!endif
SetCompressor /SOLID ${COMPRESSOR}
!if "${COMPRESSOR}" == "lzma"
  SetCompressorDictSize 64
!endif
RequestExecutionLevel user

!ifndef VERSION | VERSION_QUAD | PAYLOAD | OUTFILE
  !error "define VERSION, VERSION_QUAD, PAYLOAD and OUTFILE (see scripts/build-installer.sh)"
!endif

!define APP_NAME "Strata"
!define APP_EXE "Strata.exe"
!define CLI_EXE "strata-cli.exe"
!define PUBLISHER "Strata"
!define APP_KEY "Software\Strata"
!define UNINST_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\Strata"
; platformdirs' per-user folder for appname "strata", appauthor "Strata" (strata_gui/core/paths.py).
!define DATA_PARENT "$LOCALAPPDATA\Strata"
!define DATA_DIR "$LOCALAPPDATA\Strata\strata"
!define ICON "../resources/strata.ico"

Name "${APP_NAME}"
OutFile "${OUTFILE}"
InstallDir "$LOCALAPPDATA\Programs\Strata"
InstallDirRegKey HKCU "${APP_KEY}" "InstallDir"
BrandingText "${APP_NAME} ${VERSION}"

!include MUI2.nsh
!include LogicLib.nsh
!include FileFunc.nsh
!include Sections.nsh

!define MUI_ICON "${ICON}"
!define MUI_UNICON "${ICON}"
!define MUI_ABORTWARNING
!define MUI_COMPONENTSPAGE_NODESC

!insertmacro MUI_PAGE_WELCOME
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_INSTFILES
!define MUI_FINISHPAGE_RUN "$INSTDIR\${APP_EXE}"
!define MUI_FINISHPAGE_RUN_TEXT "$(LaunchApp)"
!insertmacro MUI_PAGE_FINISH

!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_COMPONENTS
!insertmacro MUI_UNPAGE_INSTFILES

; The first language is the fallback; otherwise the user's Windows display language decides.
!insertmacro MUI_LANGUAGE "English"
!insertmacro MUI_LANGUAGE "SimpChinese"
!include /CHARSET=UTF8 "lang/english.nsh"
!include /CHARSET=UTF8 "lang/simpchinese.nsh"

VIProductVersion "${VERSION_QUAD}"
VIFileVersion "${VERSION_QUAD}"
VIAddVersionKey /LANG=${LANG_ENGLISH} "ProductName" "${APP_NAME}"
VIAddVersionKey /LANG=${LANG_ENGLISH} "CompanyName" "${PUBLISHER}"
VIAddVersionKey /LANG=${LANG_ENGLISH} "FileDescription" "${APP_NAME} installer"
VIAddVersionKey /LANG=${LANG_ENGLISH} "FileVersion" "${VERSION}"
VIAddVersionKey /LANG=${LANG_ENGLISH} "ProductVersion" "${VERSION}"
VIAddVersionKey /LANG=${LANG_ENGLISH} "LegalCopyright" "MIT License"

Var PreviousInstallDir

Section "!$(SecApp)" SecApp
  SectionIn RO
  SetShellVarContext current

  ; In-place upgrade: the previous version's own uninstaller removes its program files
  ; (never user data) so no stale library survives; _?= keeps it from copying itself away.
  ${If} $PreviousInstallDir != ""
  ${AndIf} ${FileExists} "$PreviousInstallDir\uninstall.exe"
    DetailPrint "$(RemovingPrevious)"
    ExecWait '"$PreviousInstallDir\uninstall.exe" /S _?=$PreviousInstallDir'
    Delete "$PreviousInstallDir\uninstall.exe"
    RMDir "$PreviousInstallDir"
  ${EndIf}

  SetOutPath "$INSTDIR"
  File /r /x install-desktop.sh "${PAYLOAD}/*"
  WriteUninstaller "$INSTDIR\uninstall.exe"

  CreateShortcut "$SMPROGRAMS\${APP_NAME}.lnk" "$INSTDIR\${APP_EXE}" "" "$INSTDIR\${APP_EXE}" 0

  WriteRegStr HKCU "${APP_KEY}" "InstallDir" "$INSTDIR"
  WriteRegStr HKCU "${APP_KEY}" "Version" "${VERSION}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayName" "${APP_NAME}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKCU "${UNINST_KEY}" "Publisher" "${PUBLISHER}"
  WriteRegStr HKCU "${UNINST_KEY}" "DisplayIcon" "$INSTDIR\${APP_EXE},0"
  WriteRegStr HKCU "${UNINST_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKCU "${UNINST_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKCU "${UNINST_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKCU "${UNINST_KEY}" "NoModify" 1
  WriteRegDWORD HKCU "${UNINST_KEY}" "NoRepair" 1
  ${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
  IntFmt $0 "0x%08X" $0
  WriteRegDWORD HKCU "${UNINST_KEY}" "EstimatedSize" "$0"
SectionEnd

Section "$(SecDesktop)" SecDesktop
  SetShellVarContext current
  CreateShortcut "$DESKTOP\${APP_NAME}.lnk" "$INSTDIR\${APP_EXE}" "" "$INSTDIR\${APP_EXE}" 0
SectionEnd

Function .onInit
  ReadRegStr $PreviousInstallDir HKCU "${UNINST_KEY}" "InstallLocation"
  ; Upgrade where the user installed before, unless /D= chose a folder on the command line.
  ${If} $PreviousInstallDir != ""
  ${AndIf} $INSTDIR == "$LOCALAPPDATA\Programs\Strata"
    StrCpy $INSTDIR $PreviousInstallDir
  ${EndIf}
  ${GetParameters} $0
  ClearErrors
  ${GetOptions} $0 "/NODESKTOP" $1
  ${IfNot} ${Errors}
    !insertmacro UnselectSection ${SecDesktop}
  ${EndIf}
FunctionEnd

; ---- uninstaller ----

Section "-un.Program"
  SetShellVarContext current
  Delete "$SMPROGRAMS\${APP_NAME}.lnk"
  Delete "$DESKTOP\${APP_NAME}.lnk"
  ; Only what the installer put there: the folder may hold files the user added.
  Delete "$INSTDIR\${APP_EXE}"
  Delete "$INSTDIR\${CLI_EXE}"
  RMDir /r "$INSTDIR\_internal"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  DeleteRegKey HKCU "${UNINST_KEY}"
  DeleteRegKey HKCU "${APP_KEY}"
SectionEnd

Section /o "un.$(UnSecData)" SecUnData
  RMDir /r "${DATA_DIR}"
  RMDir "${DATA_PARENT}"
SectionEnd

Function un.onInit
  ${GetParameters} $0
  ClearErrors
  ${GetOptions} $0 "/PURGE" $1
  ${IfNot} ${Errors}
    !insertmacro SelectSection ${SecUnData}
  ${EndIf}
FunctionEnd
