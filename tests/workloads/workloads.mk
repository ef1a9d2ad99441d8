# Workloads with a known answer, for the integration tests and tools/bench.
# Included by the top-level Makefile. Built with frame pointers (leaf
# functions too) and without sibling calls, so the stacks are whole.
WL_OUT := $(OUTPUT)/workloads
WL_CFLAGS := -O2 -g -Wall -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -fno-inline-functions-called-once -pthread
WL_BINS := $(addprefix $(WL_OUT)/,shares shares-pie threads recurse uselib syscalls cpuburn)

workloads: $(WL_BINS)

$(WL_OUT):
	$(Q)mkdir -p $@

$(WL_OUT)/shares: tests/workloads/shares.c | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -MMD -MP -no-pie $< -o $@

$(WL_OUT)/shares-pie: tests/workloads/shares.c | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -MMD -MP -fPIE -pie $< -o $@

$(WL_OUT)/libwork.so: tests/workloads/libwork.c | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -MMD -MP -shared -fPIC $< -o $@

$(WL_OUT)/uselib: tests/workloads/uselib.c $(WL_OUT)/libwork.so | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -MMD -MP $< -L$(WL_OUT) -lwork -Wl,-rpath,'$$ORIGIN' -o $@

$(WL_OUT)/%: tests/workloads/%.c | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -MMD -MP $< -o $@

-include $(wildcard $(WL_OUT)/*.d)
