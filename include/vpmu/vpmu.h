/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Everything libvpmu exports. */
#ifndef VPMU_VPMU_H
#define VPMU_VPMU_H

#include <vpmu/filter.h>
#include <vpmu/operator.h>
#include <vpmu/pmu.h>
#include <vpmu/profile.h>
#include <vpmu/source.h>

/* g_autoptr() support for glib users (QEMU); include glib.h first. */
#ifdef G_DEFINE_AUTOPTR_CLEANUP_FUNC
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VpmuPmu, vpmu_pmu_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VpmuFilter, vpmu_filter_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VpmuFakeSource, vpmu_fake_source_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(VpmuOperator, vpmu_operator_free)
#endif

#endif /* VPMU_VPMU_H */
