/*
 * disallow-latest-tag: a wasmkube validating admission policy in plain C (no libc, no
 * allocator), the same policy as wasm-examples/go/disallow-latest-tag and with the same
 * verdicts and messages. A pod whose containers (init, app or ephemeral) use an image
 * without a tag or with the tag latest is refused; an image pinned by digest
 * (busybox@sha256:...) is allowed whatever its tag. Other kinds, and DELETE and CONNECT,
 * are allowed. It reads only request_kind, request_operation and pod_images: no JSON.
 */
#include "wasmkube.h"

WASMKUBE_ABI_VERSION_EXPORT

/* Images arrive one per line. 64 KiB holds far more containers than a pod can have. */
static char images[64 << 10];
/* The reason; the host cuts reasons to 1 KiB, so a longer message ends the same as Go's. */
static char msg[4 << 10];
static int32_t msg_len;

static int32_t eq(const char *a, int32_t al, const char *b, int32_t bl) {
	if (al != bl)
		return 0;
	for (int32_t i = 0; i < al; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* floating: no digest, and no tag or the tag latest. The tag is after the last colon of
 * the last path component, so a registry's port (localhost:5000/app) is not one. */
static int32_t floating(const char *img, int32_t n) {
	int32_t colon = -1;
	for (int32_t i = 0; i < n; i++) {
		if (img[i] == '@')
			return 0;
		if (img[i] == '/')
			colon = -1;
		else if (img[i] == ':')
			colon = i;
	}
	return colon < 0 || eq(img + colon + 1, n - colon - 1, "latest", 6);
}

static void put(const char *s, int32_t n) {
	for (int32_t i = 0; i < n && msg_len < (int32_t)sizeof msg; i++)
		msg[msg_len++] = s[i];
}

#define PUT(s) put((s), (int32_t)sizeof(s) - 1)

/* seen reports whether img (the line at offset at) occurred on an earlier line, so that each
 * floating image is named once, as Go's Floating does. An equal line is equally floating,
 * so a match is always an image already named. */
static int32_t seen(int32_t at, const char *img, int32_t n) {
	int32_t start = 0;
	for (int32_t i = 0; i < at; i++) {
		if (images[i] != '\n')
			continue;
		if (eq(images + start, i - start, img, n))
			return 1;
		start = i + 1;
	}
	return 0;
}

static int32_t attr_is(int32_t (*fn)(char *, int32_t), const char *want, int32_t want_len) {
	char buf[16];
	int32_t n = fn(buf, sizeof buf);
	return n >= 0 && n <= (int32_t)sizeof buf && eq(buf, n, want, want_len);
}

WASMKUBE_EXPORT(wasmkube_validate) int32_t validate(void) {
	if (!attr_is(wasmkube_request_kind, WASMKUBE_STR("Pod")))
		return WASMKUBE_SUCCESS;
	if (!attr_is(wasmkube_request_operation, WASMKUBE_STR("CREATE")) &&
	    !attr_is(wasmkube_request_operation, WASMKUBE_STR("UPDATE")))
		return WASMKUBE_SUCCESS;
	int32_t n = wasmkube_pod_images(images, sizeof images);
	if (n < 0)
		return WASMKUBE_SUCCESS;
	if (n > (int32_t)sizeof images) {
		wasmkube_status_reason(WASMKUBE_STR("disallow-latest-tag: the pod's images exceed 64 KiB"));
		return WASMKUBE_ERROR;
	}
	/* The message names the images between its head and tail: "image X has..." for one,
	 * "images X, Y have..." for several, so the head is written once the count is known. */
	static char list[sizeof msg];
	int32_t count = 0, list_len = 0, start = 0;
	for (int32_t i = 0; i < n; i++) {
		if (images[i] != '\n')
			continue;
		const char *img = images + start;
		int32_t len = i - start;
		if (floating(img, len) && !seen(start, img, len)) {
			if (count > 0)
				for (int32_t k = 0; k < 2 && list_len < (int32_t)sizeof list; k++)
					list[list_len++] = ", "[k];
			for (int32_t k = 0; k < len && list_len < (int32_t)sizeof list; k++)
				list[list_len++] = img[k];
			count++;
		}
		start = i + 1;
	}
	if (count == 0)
		return WASMKUBE_SUCCESS;
	msg_len = 0;
	if (count == 1)
		PUT("image ");
	else
		PUT("images ");
	put(list, list_len);
	if (count == 1)
		PUT(" has no tag or the tag latest: pin a version or a digest");
	else
		PUT(" have no tag or the tag latest: pin a version or a digest");
	wasmkube_status_reason(msg, msg_len);
	return WASMKUBE_DENIED;
}
