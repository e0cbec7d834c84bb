/* A fake libnvidia-ml.so.1 for the tests: the subset of the NVML C API sdcscreen calls, returning values
 * scripted in the file named by SDC_FAKE_NVML_SCRIPT (read at nvmlInit_v2). Lines:
 *   gpu UUID PCI_BUS_ID           a GPU (looked up by either)
 *   driver VERSION                nvmlSystemGetDriverVersion
 *   init_fail CODE                nvmlInit_v2 returns CODE
 *   UUID KEY VALUE [from N]       a reading; absent keys return NVML_ERROR_NOT_SUPPORTED
 *   xid UUID XID [from N]         an Xid event, delivered once
 * Keys: serial part vbios inforom ecc_mode ecc_vol_corr ecc_vol_unc ecc_agg_corr ecc_agg_unc retired_sbe
 * retired_dbe retired_pending remap_corr remap_unc remap_pending remap_failed temp sm_clock mem_clock
 * power_mw reasons pcie_gen pcie_width mem_temp (nvmlDeviceGetFieldValues' NVML_FI_DEV_MEMORY_TEMP, returned as an
 * unsigned int, or as the value type mem_temp_type names: 0 double, 4 signed long long).
 * "from N": from the device's N-th reading on (a reading starts with nvmlDeviceGetTemperature; the first is
 * 1); a later line overrides an earlier one. Built twice: FAKE_NVML_OLD leaves out what an older driver
 * lacks (row remapping, the clock event reasons name, the PCI lookup, event waits, field values). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
#define OK 0
#define NOT_SUPPORTED 3
#define NOT_FOUND 6
#define TIMEOUT 10
#define MAXG 8
#define MAXV 128
#define EXPORT __attribute__((visibility("default")))

struct value { char key[32]; char text[96]; unsigned long long num; int from; };
struct xid { unsigned long long xid; int from; int sent; };
struct gpu {
  char uuid[96], pci[64];
  struct value v[MAXV];
  int nv;
  struct xid x[16];
  int nx;
  int reads;
  int registered;
};
static struct gpu g[MAXG];
static int ng;
static char driver[64];
static int init_fail;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static struct gpu* by_uuid(const char* u) {
  for (int i = 0; i < ng; ++i)
    if (strcmp(g[i].uuid, u) == 0) return &g[i];
  return NULL;
}

static void load(void) {
  ng = 0; driver[0] = 0; init_fail = 0;
  const char* path = getenv("SDC_FAKE_NVML_SCRIPT");
  FILE* f = path ? fopen(path, "r") : NULL;
  if (!f) return;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    char a[96] = "", b[96] = "", c[96] = "", d[16] = "";
    int from = 1;
    int n = sscanf(line, "%95s %95s %95s %15s %d", a, b, c, d, &from);
    if (n < 2 || a[0] == '#') continue;
    if (n < 5) from = 1;
    if (strcmp(a, "gpu") == 0 && n >= 3 && ng < MAXG) {
      memset(&g[ng], 0, sizeof g[ng]);
      snprintf(g[ng].uuid, sizeof g[ng].uuid, "%s", b);
      snprintf(g[ng].pci, sizeof g[ng].pci, "%s", c);
      ++ng;
    } else if (strcmp(a, "driver") == 0) {
      snprintf(driver, sizeof driver, "%s", b);
    } else if (strcmp(a, "init_fail") == 0) {
      init_fail = atoi(b);
    } else if (strcmp(a, "xid") == 0 && n >= 3) {
      struct gpu* p = by_uuid(b);
      if (p && p->nx < 16) p->x[p->nx++] = (struct xid){strtoull(c, NULL, 0), from, 0};
    } else if (n >= 3) {
      struct gpu* p = by_uuid(a);
      if (!p || p->nv >= MAXV) continue;
      struct value* v = &p->v[p->nv++];
      snprintf(v->key, sizeof v->key, "%s", b);
      snprintf(v->text, sizeof v->text, "%s", c);
      v->num = strtoull(c, NULL, 0);
      v->from = from;
    }
  }
  fclose(f);
}

/* The last line for key that applies at the device's current reading. */
static struct value* get(struct gpu* p, const char* key) {
  struct value* found = NULL;
  if (!p) return NULL;
  for (int i = 0; i < p->nv; ++i)
    if (strcmp(p->v[i].key, key) == 0 && p->v[i].from <= (p->reads ? p->reads : 1)) found = &p->v[i];
  return found;
}
static nvmlReturn_t num(void* d, const char* key, unsigned long long* out) {
  pthread_mutex_lock(&mu);
  struct value* v = get((struct gpu*)d, key);
  if (v) *out = v->num;
  pthread_mutex_unlock(&mu);
  return v ? OK : NOT_SUPPORTED;
}
static nvmlReturn_t u32(void* d, const char* key, unsigned int* out) {
  unsigned long long x = 0;
  nvmlReturn_t r = num(d, key, &x);
  if (r == OK) *out = (unsigned int)x;
  return r;
}
static nvmlReturn_t text(void* d, const char* key, char* out, unsigned int len) {
  pthread_mutex_lock(&mu);
  struct value* v = get((struct gpu*)d, key);
  if (v) snprintf(out, len, "%s", v->text);
  pthread_mutex_unlock(&mu);
  return v ? OK : NOT_SUPPORTED;
}

EXPORT nvmlReturn_t nvmlInit_v2(void) { load(); return init_fail; }
EXPORT nvmlReturn_t nvmlShutdown(void) { return OK; }
EXPORT const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case OK: return "Success";
    case NOT_SUPPORTED: return "Not Supported";
    case NOT_FOUND: return "Not Found";
    case TIMEOUT: return "Timeout";
    default: return "Unknown Error";
  }
}
EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char* out, unsigned int len) {
  if (!driver[0]) return NOT_SUPPORTED;
  snprintf(out, len, "%s", driver);
  return OK;
}
EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, void** d) {
  *d = by_uuid(uuid);
  return *d ? OK : NOT_FOUND;
}
#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pci, void** d) {
  for (int i = 0; i < ng; ++i)
    if (strcmp(g[i].pci, pci) == 0) { *d = &g[i]; return OK; }
  return NOT_FOUND;
}
#endif
EXPORT nvmlReturn_t nvmlDeviceGetSerial(void* d, char* o, unsigned int n) { return text(d, "serial", o, n); }
EXPORT nvmlReturn_t nvmlDeviceGetBoardPartNumber(void* d, char* o, unsigned int n) { return text(d, "part", o, n); }
EXPORT nvmlReturn_t nvmlDeviceGetVbiosVersion(void* d, char* o, unsigned int n) { return text(d, "vbios", o, n); }
EXPORT nvmlReturn_t nvmlDeviceGetInforomImageVersion(void* d, char* o, unsigned int n) { return text(d, "inforom", o, n); }
EXPORT nvmlReturn_t nvmlDeviceGetEccMode(void* d, int* cur, int* pending) {
  unsigned int m = 0;
  nvmlReturn_t r = u32(d, "ecc_mode", &m);
  if (r == OK) *cur = *pending = (int)m;
  return r;
}
EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(void* d, unsigned type, unsigned counter, unsigned long long* out) {
  static const char* keys[2][2] = {{"ecc_vol_corr", "ecc_agg_corr"}, {"ecc_vol_unc", "ecc_agg_unc"}};
  if (type > 1 || counter > 1) return 2;
  return num(d, keys[type][counter], out);
}
EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(void* d, unsigned cause, unsigned int* count, unsigned long long* addr) {
  (void)addr;
  return u32(d, cause ? "retired_dbe" : "retired_sbe", count);
}
EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(void* d, int* p) { return u32(d, "retired_pending", (unsigned int*)p); }
#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(void* d, unsigned int* c, unsigned int* u, unsigned int* p, unsigned int* f) {
  nvmlReturn_t r = u32(d, "remap_corr", c);
  if (r == OK) r = u32(d, "remap_unc", u);
  if (r == OK) r = u32(d, "remap_pending", p);
  if (r == OK) r = u32(d, "remap_failed", f);
  return r;
}
#endif
EXPORT nvmlReturn_t nvmlDeviceGetTemperature(void* d, unsigned sensor, unsigned int* t) {
  (void)sensor;
  pthread_mutex_lock(&mu);
  ++((struct gpu*)d)->reads;  /* a reading starts here */
  pthread_mutex_unlock(&mu);
  return u32(d, "temp", t);
}
EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(void* d, unsigned type, unsigned int* mhz) {
  return u32(d, type == 1 ? "sm_clock" : type == 2 ? "mem_clock" : "other_clock", mhz);
}
EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(void* d, unsigned int* mw) { return u32(d, "power_mw", mw); }
#ifndef FAKE_NVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void* d, unsigned long long* r) { return num(d, "reasons", r); }
#endif
EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(void* d, unsigned long long* r) { return num(d, "reasons", r); }
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(void* d, unsigned int* v) { return u32(d, "pcie_gen", v); }
EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(void* d, unsigned int* v) { return u32(d, "pcie_width", v); }

#ifndef FAKE_NVML_OLD
/* nvmlFieldValue_t as the NVML API reference lays it out. */
union field_value { double d; int si; unsigned int ui; unsigned long ul; unsigned long long ull; long long sll; unsigned short us; };
struct field { unsigned int id, scope; long long timestamp, latency; int type; nvmlReturn_t ret; union field_value v; };
EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(void* d, int count, struct field* values) {
  if (count < 0 || (count > 0 && !values)) return 2;
  for (int i = 0; i < count; ++i) {
    struct field* f = &values[i];
    unsigned long long x = 0, type = 1;
    f->timestamp = 0;
    f->latency = 0;
    f->ret = f->id == 82 ? num(d, "mem_temp", &x) : NOT_SUPPORTED;
    if (f->ret != OK) continue;
    if (num(d, "mem_temp_type", &type) != OK) type = 1;
    f->type = (int)type;
    memset(&f->v, 0xa5, sizeof f->v);  /* the bytes the value's type leaves out are not zero */
    if (type == 0) f->v.d = (double)x;
    else if (type == 4) f->v.sll = (long long)x;
    else f->v.ui = (unsigned int)x;
  }
  return OK;
}
#endif

static int event_set;
EXPORT nvmlReturn_t nvmlEventSetCreate(void** set) { *set = &event_set; return OK; }
EXPORT nvmlReturn_t nvmlEventSetFree(void* set) { (void)set; return OK; }
EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(void* d, unsigned long long types, void* set) {
  (void)set;
  if (!(types & 0x8)) return NOT_SUPPORTED;
  pthread_mutex_lock(&mu);
  ((struct gpu*)d)->registered = 1;
  pthread_mutex_unlock(&mu);
  return OK;
}
#ifndef FAKE_NVML_OLD
struct event_data { void* device; unsigned long long type, data; unsigned int gi, ci; };
EXPORT nvmlReturn_t nvmlEventSetWait_v2(void* set, struct event_data* e, unsigned int timeout_ms) {
  (void)set; (void)timeout_ms;  /* never blocks: the fake's events are all queued already */
  nvmlReturn_t r = TIMEOUT;
  pthread_mutex_lock(&mu);
  for (int i = 0; i < ng && r != OK; ++i)
    for (int k = 0; k < g[i].nx && r != OK; ++k)
      if (g[i].registered && !g[i].x[k].sent && g[i].x[k].from <= g[i].reads) {
        g[i].x[k].sent = 1;
        *e = (struct event_data){&g[i], 0x8, g[i].x[k].xid, 0xffffffffu, 0xffffffffu};
        r = OK;
      }
  pthread_mutex_unlock(&mu);
  return r;
}
#endif
