#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
static void logp(const char *op, const char *p, int ok) {
  const char *f = getenv("SHIM_LOG");
  if (!f || !p) return;
  int fd = ((int(*)(const char*, int, ...))dlsym(RTLD_NEXT, "open"))(f, O_WRONLY|O_APPEND|O_CREAT, 0644);
  if (fd < 0) return;
  char b[4200]; int n = snprintf(b, sizeof b, "%s %d %s\n", op, ok, p);
  write(fd, b, n); close(fd);
}
#define WRAPOPEN(name) int name(const char *p, int fl, ...) { va_list a; va_start(a, fl); int m = va_arg(a, int); va_end(a); \
  int r = ((int(*)(const char*, int, ...))dlsym(RTLD_NEXT, #name))(p, fl, m); logp(#name, p, r >= 0); return r; }
WRAPOPEN(open) WRAPOPEN(open64)
int openat(int d, const char *p, int fl, ...) { va_list a; va_start(a, fl); int m = va_arg(a, int); va_end(a);
  int r = ((int(*)(int, const char*, int, ...))dlsym(RTLD_NEXT, "openat"))(d, p, fl, m); logp("openat", p, r >= 0); return r; }
FILE *fopen(const char *p, const char *m) { FILE *r = ((FILE*(*)(const char*, const char*))dlsym(RTLD_NEXT, "fopen"))(p, m); logp("fopen", p, r != 0); return r; }
FILE *fopen64(const char *p, const char *m) { FILE *r = ((FILE*(*)(const char*, const char*))dlsym(RTLD_NEXT, "fopen64"))(p, m); logp("fopen64", p, r != 0); return r; }
int stat(const char *p, struct stat *s) { int r = ((int(*)(const char*, struct stat*))dlsym(RTLD_NEXT, "stat"))(p, s); logp("stat", p, r == 0); return r; }
int stat64(const char *p, struct stat64 *s) { int r = ((int(*)(const char*, struct stat64*))dlsym(RTLD_NEXT, "stat64"))(p, s); logp("stat64", p, r == 0); return r; }
int lstat(const char *p, struct stat *s) { int r = ((int(*)(const char*, struct stat*))dlsym(RTLD_NEXT, "lstat"))(p, s); logp("lstat", p, r == 0); return r; }
int access(const char *p, int m) { int r = ((int(*)(const char*, int))dlsym(RTLD_NEXT, "access"))(p, m); logp("access", p, r == 0); return r; }
int __xstat(int v, const char *p, struct stat *s) { int r = ((int(*)(int, const char*, struct stat*))dlsym(RTLD_NEXT, "__xstat"))(v, p, s); logp("xstat", p, r == 0); return r; }
int __xstat64(int v, const char *p, struct stat64 *s) { int r = ((int(*)(int, const char*, struct stat64*))dlsym(RTLD_NEXT, "__xstat64"))(v, p, s); logp("xstat64", p, r == 0); return r; }
int fstatat(int d, const char *p, struct stat *s, int f) { int r = ((int(*)(int, const char*, struct stat*, int))dlsym(RTLD_NEXT, "fstatat"))(d, p, s, f); logp("fstatat", p, r == 0); return r; }
int statx(int d, const char *p, int f, unsigned m, struct statx *s) { int r = ((int(*)(int, const char*, int, unsigned, struct statx*))dlsym(RTLD_NEXT, "statx"))(d, p, f, m, s); logp("statx", p, r == 0); return r; }
