/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Everything libvpmu exports. */
#ifndef VPMU_VPMU_H
#define VPMU_VPMU_H

#include <vpmu/filter.h>
#include <vpmu/pmu.h>
#include <vpmu/source.h>

#endif /* VPMU_VPMU_H */
