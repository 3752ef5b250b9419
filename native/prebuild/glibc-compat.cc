// Only in the prebuilt binary (scripts/build-prebuild.mjs): binds the few glibc functions whose
// default symbol version is newer than glibc 2.27 to their older versions, so that one binary built
// here (glibc 2.36) loads on every glibc >= 2.27. pthread_* moved from libpthread into libc in 2.34
// and kept their old versions as aliases of the same code; pow got a new version in 2.29 (the old
// one differs only in SVID error handling). The linker's --wrap=NAME sends every reference to NAME,
// in the addon and in the static OpenBLAS, to __wrap_NAME here.
#include <pthread.h>
#include <sched.h>

extern "C" {
int sharp_pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
int sharp_pthread_join(pthread_t, void**);
int sharp_pthread_getaffinity_np(pthread_t, size_t, cpu_set_t*);
int sharp_pthread_setaffinity_np(pthread_t, size_t, const cpu_set_t*);
double sharp_pow(double, double);
}
__asm__(".symver sharp_pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver sharp_pthread_join,pthread_join@GLIBC_2.2.5");
__asm__(".symver sharp_pthread_getaffinity_np,pthread_getaffinity_np@GLIBC_2.3.4");
__asm__(".symver sharp_pthread_setaffinity_np,pthread_setaffinity_np@GLIBC_2.3.4");
__asm__(".symver sharp_pow,pow@GLIBC_2.2.5");

extern "C" {
int __wrap_pthread_create(pthread_t* t, const pthread_attr_t* a, void* (*f)(void*), void* arg) { return sharp_pthread_create(t, a, f, arg); }
int __wrap_pthread_join(pthread_t t, void** ret) { return sharp_pthread_join(t, ret); }
int __wrap_pthread_getaffinity_np(pthread_t t, size_t n, cpu_set_t* s) { return sharp_pthread_getaffinity_np(t, n, s); }
int __wrap_pthread_setaffinity_np(pthread_t t, size_t n, const cpu_set_t* s) { return sharp_pthread_setaffinity_np(t, n, s); }
double __wrap_pow(double x, double y) { return sharp_pow(x, y); }
}
