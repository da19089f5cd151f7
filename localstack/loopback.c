// loopback.so: an LD_PRELOAD shim that keeps the local emulators on loopback.
//
// LocalStack 4.14's gateway server ignores the host of GATEWAY_LISTEN, and
// DynamoDB Local (which LocalStack starts) has no bind-address option: both
// listen on every interface. Preloaded into them by localstack/host.sh, this
// turns a bind of a stream socket to the wildcard address (0.0.0.0 or ::)
// into a bind to loopback (127.0.0.1 or ::1). Any other bind is untouched.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

static int is_stream(int fd) {
  int type = 0;
  socklen_t len = sizeof type;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
}

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  static bind_fn real;
  if (!real) real = (bind_fn)dlsym(RTLD_NEXT, "bind");
  if (addr && is_stream(fd)) {
    if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
      struct sockaddr_in a;
      memcpy(&a, addr, sizeof a);
      if (a.sin_addr.s_addr == htonl(INADDR_ANY)) {
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return real(fd, (const struct sockaddr *)&a, sizeof a);
      }
    } else if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
      struct sockaddr_in6 a;
      memcpy(&a, addr, sizeof a);
      if (IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr)) {
        a.sin6_addr = in6addr_loopback;
        return real(fd, (const struct sockaddr *)&a, sizeof a);
      }
    }
  }
  return real(fd, addr, len);
}
