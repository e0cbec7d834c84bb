// The part of the NVML C API (libnvidia-ml.so.1, the driver's management library) that sdcscreen calls,
// declared from NVIDIA's public API documentation so that building needs no CUDA toolkit and no driver:
// the library is loaded at run time (nvml.cpp), and a host without it still screens. The test suite's fake
// library (tests/fake_nvml) implements the same declarations.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;  // an enum in nvml.h; int-sized on every ABI the driver ships for
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;

enum : int {
  NVML_SUCCESS = 0,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_TIMEOUT = 10,
};

// nvmlMemoryErrorType_t, nvmlEccCounterType_t, nvmlTemperatureSensors_t, nvmlClockType_t,
// nvmlPageRetirementCause_t: the values the calls below take.
enum : unsigned { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum : unsigned { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
enum : unsigned { NVML_TEMPERATURE_GPU = 0 };
enum : unsigned { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum : unsigned { NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
                  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1 };
constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x8ull;

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid, for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

// NVML's field-value API (nvmlDeviceGetFieldValues), as the public NVML API reference lays out
// nvmlFieldValue_t, nvmlValue_t and nvmlValueType_t (struct nvmlFieldValue_st in nvml.h): the memory
// temperature is read through it (field NVML_FI_DEV_MEMORY_TEMP, in degrees C).
constexpr unsigned NVML_FI_DEV_MEMORY_TEMP = 82;
enum : int {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};
typedef int nvmlValueType_t;  // an enum in nvml.h
typedef union nvmlValue_st {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
} nvmlValue_t;
typedef struct nvmlFieldValue_st {
  unsigned int fieldId;  // in: the field (NVML_FI_*)
  unsigned int scopeId;  // in: 0 for a device-wide field ("unused" in older headers, same place)
  long long timestamp;   // CPU time of the value, microseconds since 1970
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;  // this field's own result: value is valid only when NVML_SUCCESS
  nvmlValue_t value;
} nvmlFieldValue_t;
static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, value) == 32,
              "nvmlFieldValue_t: the layout of the NVML API reference (LP64)");

typedef nvmlReturn_t (*nvmlInit_v2_t)(void);
typedef nvmlReturn_t (*nvmlShutdown_t)(void);
typedef const char* (*nvmlErrorString_t)(nvmlReturn_t);
typedef nvmlReturn_t (*nvmlSystemGetDriverVersion_t)(char*, unsigned int);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByUUID_t)(const char*, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetHandleByPciBusId_v2_t)(const char*, nvmlDevice_t*);
typedef nvmlReturn_t (*nvmlDeviceGetString_t)(nvmlDevice_t, char*, unsigned int);  // serial, part, VBIOS, InfoROM
typedef nvmlReturn_t (*nvmlDeviceGetEccMode_t)(nvmlDevice_t, int* current, int* pending);
typedef nvmlReturn_t (*nvmlDeviceGetTotalEccErrors_t)(nvmlDevice_t, unsigned, unsigned, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPages_t)(nvmlDevice_t, unsigned, unsigned int*, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetRetiredPagesPendingStatus_t)(nvmlDevice_t, int*);
typedef nvmlReturn_t (*nvmlDeviceGetRemappedRows_t)(nvmlDevice_t, unsigned int*, unsigned int*, unsigned int*,
                                                     unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetTemperature_t)(nvmlDevice_t, unsigned, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetClockInfo_t)(nvmlDevice_t, unsigned, unsigned int*);
typedef nvmlReturn_t (*nvmlDeviceGetUInt_t)(nvmlDevice_t, unsigned int*);  // power (mW), PCIe gen and width
typedef nvmlReturn_t (*nvmlDeviceGetClockReasons_t)(nvmlDevice_t, unsigned long long*);
typedef nvmlReturn_t (*nvmlDeviceGetFieldValues_t)(nvmlDevice_t, int valuesCount, nvmlFieldValue_t* values);
typedef nvmlReturn_t (*nvmlEventSetCreate_t)(nvmlEventSet_t*);
typedef nvmlReturn_t (*nvmlDeviceRegisterEvents_t)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
typedef nvmlReturn_t (*nvmlEventSetWait_v2_t)(nvmlEventSet_t, nvmlEventData_t*, unsigned int);
typedef nvmlReturn_t (*nvmlEventSetFree_t)(nvmlEventSet_t);

}  // extern "C"
