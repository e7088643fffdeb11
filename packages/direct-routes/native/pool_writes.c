/*
 * Socket writes on a thread of libuv's pool, for the parts of a striped
 * reply between hosts (see docs/data-plane.md, "Lanes between hosts"): the
 * kernel's work of sending (copying the bytes in, and on a veth pair the
 * receiving side's TCP stack too) then runs on several cores at once instead
 * of all on the event loop's thread.
 *
 *   writev(fd, views, callback)   writes the views, in order, to the socket fd from a pool thread,
 *                                 as much as its send buffer takes now (it never waits for room);
 *                                 then callback(errno, bytes written) on the JavaScript thread
 *                                 (errno 0: no error; the rest is the caller's to write)
 *
 * The descriptor is duplicated before the call returns and closed after the
 * write: a socket closed meanwhile stays the same socket for this write,
 * never another file that reused its number. The views' memory must stay
 * where it is until the callback (the caller holds it; each view is kept
 * referenced until then).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <node_api.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

/** The most views one call takes (a part header and its body's views). */
#define MAX_VIEWS 64

typedef struct {
  napi_async_work work;
  napi_ref callback;
  napi_ref views[MAX_VIEWS];
  struct iovec iov[MAX_VIEWS];
  size_t count;
  int fd;
  size_t written;
  int error;
} pool_write;

static void release(napi_env env, pool_write* w) {
  for (size_t i = 0; i < w->count; i++) napi_delete_reference(env, w->views[i]);
  if (w->callback) napi_delete_reference(env, w->callback);
  if (w->work) napi_delete_async_work(env, w->work);
  if (w->fd >= 0) close(w->fd);
  free(w);
}

/* On a pool thread: writev until every byte is written or the socket would block. */
static void execute(napi_env env, void* data) {
  (void)env;
  pool_write* w = data;
  size_t i = 0;
  while (i < w->count) {
    ssize_t n = writev(w->fd, w->iov + i, (int)(w->count - i));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) w->error = errno;
      return;
    }
    if (n == 0) return;
    w->written += (size_t)n;
    size_t left = (size_t)n;
    while (i < w->count && left >= w->iov[i].iov_len) left -= w->iov[i++].iov_len;
    if (i < w->count) {
      w->iov[i].iov_base = (char*)w->iov[i].iov_base + left;
      w->iov[i].iov_len -= left;
    }
  }
}

/* On the JavaScript thread: callback(errno, written), then everything is let go of. */
static void complete(napi_env env, napi_status status, void* data) {
  pool_write* w = data;
  napi_value callback, global, argv[2];
  if (napi_get_reference_value(env, w->callback, &callback) == napi_ok && napi_get_global(env, &global) == napi_ok &&
      napi_create_int32(env, status == napi_ok ? w->error : ECANCELED, &argv[0]) == napi_ok &&
      napi_create_double(env, (double)w->written, &argv[1]) == napi_ok) {
    napi_call_function(env, global, callback, 2, argv, NULL);
  }
  release(env, w);
}

napi_value pool_writev(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return NULL;
  int32_t fd;
  uint32_t count;
  bool is_array;
  napi_valuetype callback_type;
  if (argc < 3 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0 || napi_is_array(env, argv[1], &is_array) != napi_ok || !is_array ||
      napi_get_array_length(env, argv[1], &count) != napi_ok || count == 0 || count > MAX_VIEWS ||
      napi_typeof(env, argv[2], &callback_type) != napi_ok || callback_type != napi_function) {
    napi_throw_type_error(env, NULL, "writev(fd, views, callback): a descriptor, 1 to 64 Uint8Arrays and a function");
    return NULL;
  }
  pool_write* w = calloc(1, sizeof *w);
  if (!w) {
    napi_throw_error(env, NULL, "writev: out of memory");
    return NULL;
  }
  w->fd = -1;
  for (uint32_t i = 0; i < count; i++) {
    napi_value view;
    bool is_typed;
    napi_typedarray_type type;
    size_t length;
    void* bytes;
    if (napi_get_element(env, argv[1], i, &view) != napi_ok || napi_is_typedarray(env, view, &is_typed) != napi_ok || !is_typed ||
        napi_get_typedarray_info(env, view, &type, &length, &bytes, NULL, NULL) != napi_ok || type != napi_uint8_array ||
        napi_create_reference(env, view, 1, &w->views[w->count]) != napi_ok) {
      release(env, w);
      napi_throw_type_error(env, NULL, "writev: every view must be a Uint8Array");
      return NULL;
    }
    w->iov[w->count].iov_base = bytes;
    w->iov[w->count].iov_len = length;
    w->count++;
  }
  w->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  napi_value name;
  if (w->fd < 0 || napi_create_reference(env, argv[2], 1, &w->callback) != napi_ok ||
      napi_create_string_utf8(env, "tensorbus.writev", NAPI_AUTO_LENGTH, &name) != napi_ok ||
      napi_create_async_work(env, NULL, name, execute, complete, w, &w->work) != napi_ok || napi_queue_async_work(env, w->work) != napi_ok) {
    release(env, w);
    napi_throw_error(env, NULL, "writev: cannot start the write");
    return NULL;
  }
  return NULL;
}
