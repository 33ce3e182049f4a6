/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Symbol visibility for libvpmu; the version script (vpmu/libvpmu.map) decides. */
#ifndef VPMU_EXPORT_H
#define VPMU_EXPORT_H

#if defined(__GNUC__)
#define VPMU_API __attribute__((visibility("default")))
#else
#define VPMU_API
#endif

#endif /* VPMU_EXPORT_H */
