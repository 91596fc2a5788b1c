/*
 * A stand-in for Windows' system ICU (C:\Windows\System32\icuuc.dll), for the Wine prefix only.
 *
 * Qt 6.11's Qt6Core.dll links the ICU that Windows 10 1903+ ships; Wine 8.0 has none, so no Qt
 * module loads. Qt calls these 20 converter functions only for legacy 8-bit encodings (it
 * handles UTF-8/UTF-16 itself), so every converter open fails here and Qt reports the encoding
 * as unavailable. Never shipped to users: a real Windows has the real DLL.
 *
 * Built by scripts/windows-under-wine.sh with x86_64-w64-mingw32-gcc.
 */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __declspec(dllexport)
#define U_FILE_ACCESS_ERROR 4

typedef int UErrorCode;
typedef void UConverter;
typedef uint16_t UChar;

static void fail(UErrorCode *err) { if (err && *err <= 0) *err = U_FILE_ACCESS_ERROR; }

EXPORT UConverter *ucnv_open(const char *name, UErrorCode *err) { (void)name; fail(err); return NULL; }
EXPORT void ucnv_close(UConverter *c) { (void)c; }
EXPORT void ucnv_reset(UConverter *c) { (void)c; }
EXPORT int8_t ucnv_getMaxCharSize(const UConverter *c) { (void)c; return 1; }
EXPORT const char *ucnv_getName(const UConverter *c, UErrorCode *err) { (void)c; fail(err); return NULL; }
EXPORT void ucnv_getToUCallBack(const UConverter *c, void **action, const void **context) {
    (void)c; if (action) *action = NULL; if (context) *context = NULL; }
EXPORT void ucnv_getFromUCallBack(const UConverter *c, void **action, const void **context) {
    (void)c; if (action) *action = NULL; if (context) *context = NULL; }
EXPORT void ucnv_setToUCallBack(UConverter *c, void *a, const void *ctx, void **oa, const void **octx, UErrorCode *err) {
    (void)c; (void)a; (void)ctx; if (oa) *oa = NULL; if (octx) *octx = NULL; fail(err); }
EXPORT void ucnv_setFromUCallBack(UConverter *c, void *a, const void *ctx, void **oa, const void **octx, UErrorCode *err) {
    (void)c; (void)a; (void)ctx; if (oa) *oa = NULL; if (octx) *octx = NULL; fail(err); }
EXPORT void UCNV_FROM_U_CALLBACK_SUBSTITUTE(const void *ctx, void *args, const UChar *cu, int32_t len, int32_t cp,
                                            int reason, UErrorCode *err) {
    (void)ctx; (void)args; (void)cu; (void)len; (void)cp; (void)reason; fail(err); }
EXPORT void UCNV_TO_U_CALLBACK_SUBSTITUTE(const void *ctx, void *args, const char *cu, int32_t len, int reason,
                                          UErrorCode *err) {
    (void)ctx; (void)args; (void)cu; (void)len; (void)reason; fail(err); }
EXPORT void ucnv_cbToUWriteUChars(void *args, const UChar *s, int32_t len, int32_t off, UErrorCode *err) {
    (void)args; (void)s; (void)len; (void)off; fail(err); }
EXPORT void ucnv_cbFromUWriteUChars(void *args, const UChar **s, const UChar *lim, int32_t off, UErrorCode *err) {
    (void)args; (void)s; (void)lim; (void)off; fail(err); }
EXPORT void ucnv_toUnicode(UConverter *c, UChar **t, const UChar *tl, const char **s, const char *sl, int32_t *o,
                           int8_t flush, UErrorCode *err) {
    (void)c; (void)t; (void)tl; (void)s; (void)sl; (void)o; (void)flush; fail(err); }
EXPORT void ucnv_fromUnicode(UConverter *c, char **t, const char *tl, const UChar **s, const UChar *sl, int32_t *o,
                             int8_t flush, UErrorCode *err) {
    (void)c; (void)t; (void)tl; (void)s; (void)sl; (void)o; (void)flush; fail(err); }
EXPORT int32_t ucnv_toUCountPending(const UConverter *c, UErrorCode *err) { (void)c; fail(err); return 0; }
EXPORT int32_t ucnv_fromUCountPending(const UConverter *c, UErrorCode *err) { (void)c; fail(err); return 0; }
EXPORT const char *ucnv_getStandardName(const char *name, const char *std, UErrorCode *err) {
    (void)name; (void)std; fail(err); return NULL; }
EXPORT const char *ucnv_getAvailableName(int32_t n) { (void)n; return NULL; }
EXPORT int32_t ucnv_countAvailable(void) { return 0; }
