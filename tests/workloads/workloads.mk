# Workloads with a known answer, for the integration tests and tools/bench.
# Included by the top-level Makefile. Built with frame pointers (leaf
# functions too) and without sibling calls, so the stacks are whole.
WL_OUT := $(OUTPUT)/workloads
WL_CFLAGS := -O2 -g -Wall -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -fno-inline-functions-called-once -pthread
WL_BINS := $(addprefix $(WL_OUT)/,shares shares-pie threads recurse uselib syscalls cpuburn \
	shares-stripped cache branch fork_short jit)

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

# shares stripped of all symbols, its .symtab in a debug root by build-ID:
# named only when bpfsampler finds the debug file (--debug-dir).
$(WL_OUT)/shares-stripped: $(WL_OUT)/shares
	$(call msg,STRIP,$@)
	$(Q)id=$$(readelf -n $< | awk '/Build ID/ { print $$3 }') && \
		mkdir -p $(WL_OUT)/debugroot/.build-id/$${id%"$${id#??}"} && \
		objcopy --only-keep-debug $< $(WL_OUT)/debugroot/.build-id/$${id%"$${id#??}"}/$${id#??}.debug
	$(Q)strip --strip-all -o $@ $<

$(WL_OUT)/%: tests/workloads/%.c | $(WL_OUT)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WL_CFLAGS) -MMD -MP $< -o $@

-include $(wildcard $(WL_OUT)/*.d)
