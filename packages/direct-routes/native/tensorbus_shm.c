/*
 * Shared-memory segments for the same-host data plane (see docs/data-plane.md).
 *
 *   create(size)            -> [fd, ArrayBuffer]  anonymous memory file (memfd), mapped read-write
 *   open(pid, fd, size, uid) -> ArrayBuffer       another process's segment, through /proc/<pid>/fd/<fd>:
 *                                                 only an anonymous memory file (memfd) owned by uid, of exactly size bytes
 *   close(fd)                                     closes a segment's file descriptor
 *   peer(fd) -> [pid, uid]                        the process at the other end of a connected Unix socket, as
 *                                                 the kernel recorded it when the connection was made (SO_PEERCRED):
 *                                                 the proof of a peer that segment references need on such a socket
 *   sendBuffer(fd, bytes)                         asks for a socket send buffer of bytes (the kernel caps it at
 *                                                 net.core.wmem_max): a Unix socket's default holds a fifth of a MiB
 *
 * A mapping is unmapped when its ArrayBuffer is garbage-collected; a
 * segment's memory is freed when its creator has closed the descriptor and
 * every mapping is gone, so a process that dies leaves nothing behind.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <node_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHECK(call)                                                   \
  do {                                                                \
    if ((call) != napi_ok) {                                          \
      napi_throw_error(env, NULL, "tensorbus_shm: N-API call failed"); \
      return NULL;                                                    \
    }                                                                 \
  } while (0)

typedef struct {
  void* address;
  size_t size;
} mapping;

static napi_value throw_errno(napi_env env, const char* what) {
  char message[256];
  snprintf(message, sizeof message, "%s: %s", what, strerror(errno));
  napi_throw_error(env, NULL, message);
  return NULL;
}

static void finalize_mapping(napi_env env, void* data, void* hint) {
  (void)env;
  (void)data;
  mapping* m = (mapping*)hint;
  if (m->address != NULL) munmap(m->address, m->size);
  free(m);
}

/* [first, second], a two-element array. */
static napi_value pair(napi_env env, napi_value first, napi_value second) {
  napi_value result;
  CHECK(napi_create_array_with_length(env, 2, &result));
  CHECK(napi_set_element(env, result, 0, first));
  CHECK(napi_set_element(env, result, 1, second));
  return result;
}

static napi_value map_fd(napi_env env, int fd, size_t size) {
  void* address = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return throw_errno(env, "mmap");
  mapping* m = malloc(sizeof *m);
  m->address = address;
  m->size = size;
  napi_value buffer;
  if (napi_create_external_arraybuffer(env, address, size, finalize_mapping, m, &buffer) != napi_ok) {
    munmap(address, size);
    free(m);
    napi_throw_error(env, NULL, "tensorbus_shm: cannot wrap the mapping");
    return NULL;
  }
  return buffer;
}

static int get_size(napi_env env, napi_value value, size_t* out) {
  double d;
  if (napi_get_value_double(env, value, &d) != napi_ok || d < 1 || d > 9007199254740991.0) return 0;
  *out = (size_t)d;
  return 1;
}

static napi_value create(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  size_t size;
  if (argc < 1 || !get_size(env, argv[0], &size)) {
    napi_throw_type_error(env, NULL, "create(size): size must be a positive integer");
    return NULL;
  }
  int fd = (int)syscall(SYS_memfd_create, "tensorbus", MFD_CLOEXEC);
  if (fd < 0) return throw_errno(env, "memfd_create");
  if (ftruncate(fd, (off_t)size) != 0) {
    napi_value error = throw_errno(env, "ftruncate");
    close(fd);
    return error;
  }
  napi_value buffer = map_fd(env, fd, size);
  if (buffer == NULL) {
    close(fd);
    return NULL;
  }
  napi_value fd_value;
  CHECK(napi_create_int32(env, fd, &fd_value));
  return pair(env, fd_value, buffer);
}

static napi_value open_segment(napi_env env, napi_callback_info info) {
  size_t argc = 4;
  napi_value argv[4];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t pid, fd;
  uint32_t uid;
  size_t size;
  if (argc < 4 || napi_get_value_int32(env, argv[0], &pid) != napi_ok || napi_get_value_int32(env, argv[1], &fd) != napi_ok ||
      pid <= 0 || fd < 0 || !get_size(env, argv[2], &size) || napi_get_value_uint32(env, argv[3], &uid) != napi_ok) {
    napi_throw_type_error(env, NULL, "open(pid, fd, size, uid): non-negative integers expected");
    return NULL;
  }
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
  /*
   * This runs on the event loop: the open must not wait. Only a memfd is opened at all (its link reads
   * "/memfd:<name> (deleted)"), never a FIFO, device or file another descriptor now names (the peer closed
   * the segment and the number was reused), and O_NONBLOCK keeps even a descriptor swapped in between the
   * two steps from blocking (a FIFO without a writer, a file under a lease).
   */
  char target[80];
  ssize_t n = readlink(path, target, sizeof target - 1);
  if (n < 0) return throw_errno(env, "open segment");
  target[n] = '\0';
  if (strncmp(target, "/memfd:", 7) != 0) {
    napi_throw_error(env, NULL, "open segment: not an anonymous memory file of the peer's user");
    return NULL;
  }
  int own = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (own < 0) return throw_errno(env, "open segment");
  struct stat st;
  /* Mapping past the end of the file would fault on access: the file must be exactly that large. */
  if (fstat(own, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != size) {
    close(own);
    napi_throw_error(env, NULL, "open segment: not a segment of the announced size");
    return NULL;
  }
  /*
   * Opened with this process's privileges: only memory the peer made itself may be mapped, never a
   * file it merely holds (a path-only descriptor of a file it may not read would be read here).
   * A memfd has no name in any file system and answers F_GET_SEALS; it belongs to its creator's user.
   */
  if (st.st_nlink != 0 || st.st_uid != (uid_t)uid || fcntl(own, F_GET_SEALS) < 0) {
    close(own);
    napi_throw_error(env, NULL, "open segment: not an anonymous memory file of the peer's user");
    return NULL;
  }
  napi_value buffer = map_fd(env, own, size);
  close(own);
  return buffer;
}

static napi_value close_fd(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t fd;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) return NULL;
  close(fd);
  return NULL;
}

static napi_value peer_of(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t fd;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) {
    napi_throw_error(env, NULL, "peer: a socket descriptor is needed");
    return NULL;
  }
  struct ucred cred;
  socklen_t length = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &length) != 0) return throw_errno(env, "peer");
  if (cred.pid <= 0) {
    napi_throw_error(env, NULL, "peer: no process at the other end");
    return NULL;
  }
  napi_value pid, uid;
  CHECK(napi_create_int32(env, cred.pid, &pid));
  CHECK(napi_create_uint32(env, cred.uid, &uid));
  return pair(env, pid, uid);
}

static napi_value send_buffer(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  int32_t fd, bytes;
  if (argc < 2 || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int32(env, argv[1], &bytes) != napi_ok || fd < 0 || bytes <= 0) {
    napi_throw_error(env, NULL, "sendBuffer: a socket descriptor and a size are needed");
    return NULL;
  }
  int size = bytes;
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size) != 0) return throw_errno(env, "sendBuffer");
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor properties[] = {
      {"create", NULL, create, NULL, NULL, NULL, napi_default, NULL},
      {"open", NULL, open_segment, NULL, NULL, NULL, napi_default, NULL},
      {"close", NULL, close_fd, NULL, NULL, NULL, napi_default, NULL},
      {"peer", NULL, peer_of, NULL, NULL, NULL, napi_default, NULL},
      {"sendBuffer", NULL, send_buffer, NULL, NULL, NULL, napi_default, NULL},
  };
  if (napi_define_properties(env, exports, 5, properties) != napi_ok) return NULL;
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
