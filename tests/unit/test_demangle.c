// SPDX-License-Identifier: GPL-2.0
/* demangle(): C++ (Itanium), Rust legacy and Rust v0 names as libiberty
 * reads them, PLT stubs' names ("...@plt"), names that are not mangled
 * left alone, and the profile
 * keeping both forms (--no-demangle keeps the raw one as the name). */
#include <stdlib.h>
#include <string.h>

#include "demangle.h"
#include "profile.h"
#include "unit.h"

static void expect(const char *raw, const char *want)
{
	char *got = demangle(raw);

	if (want)
		CHECK(got && !strcmp(got, want), "%s: got '%s', want '%s'", raw,
		      got ? got : "(null)", want);
	else
		CHECK(!got, "%s: not mangled, got '%s'", raw, got);
	free(got);
}

static void test_cxx(void)
{
	expect("_ZN3geo4GridIdE5relaxEi", "geo::Grid<double>::relax(int)");
	expect("_ZZN4work5churnEiENKUliE_clEi",
	       "work::churn(int)::{lambda(int)#1}::operator()(int) const");
	expect("_ZNSt6vectorIiSaIiEE9push_backERKi",
	       "std::vector<int, std::allocator<int> >::push_back(int const&)");
	expect("_ZN3foo3barE", "foo::bar");
}

/* A template function's mangled name carries its return type, and
 * c++filt prints it first; perf and pprof do not, nor do we. */
static void test_cxx_no_return_type(void)
{
	expect("_ZSt16__introsort_loopIPiiN9__gnu_cxx5__ops15_Iter_less_iterEEvT_S4_T0_T1_",
	       "std::__introsort_loop<int*, int, __gnu_cxx::__ops::_Iter_less_iter>"
	       "(int*, int*, int, __gnu_cxx::__ops::_Iter_less_iter)");
	expect("_ZN2v88internal15JsonStringifier10Serialize_ILb0EEENS1_6ResultENS0_6HandleINS0_"
	       "6ObjectEEEbS6_",
	       "v8::internal::JsonStringifier::Serialize_<false>(v8::internal::Handle<"
	       "v8::internal::Object>, bool, v8::internal::Handle<v8::internal::Object>)");
	/* a function returning a function pointer: the declarator goes too */
	expect("_Z1fIiEPFivEv", "f<int>()");
	expect("_Z9spin_longI4LeafEdd", "spin_long<Leaf>(double)");
}

static void test_rust_legacy(void)
{
	/* the hash suffix is left out, as rustfilt does */
	expect("_ZN8rustwork3geo5relax17h8bd482d069d06b6aE", "rustwork::geo::relax");
	expect("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", "core::ptr::drop_in_place");
}

static void test_rust_v0(void)
{
	/* crate disambiguators (Cs..._) are left out unless verbose */
	expect("_RNvNtCs1234_7mycrate3foo3bar", "mycrate::foo::bar");
	expect("_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example");
	expect("_RINvNtCs1234_7mycrate3foo3bazlE", "mycrate::foo::baz::<i32>");
}

/* A PLT stub is named after its function: demangled as it, "@plt" kept. */
static void test_plt_stub(void)
{
	expect("_ZSt9terminatev@plt", "std::terminate()@plt");
	expect("_ZN8rustwork3geo5relax17h8bd482d069d06b6aE@plt", "rustwork::geo::relax@plt");
	expect("getenv@plt", NULL);
	expect("@plt", NULL);
	expect("_Znot a name@plt", NULL);
}

static void test_not_mangled(void)
{
	expect("main", NULL);
	expect("do_syscall_64", NULL);
	expect("_start", NULL);
	expect("_Znot a name", NULL);
	expect("", NULL);
	expect(NULL, NULL);
	/* libiberty demangles it to "" (found by fuzz_demangle): kept raw */
	expect("_RC0", NULL);
}

static void test_profile_keeps_both(void)
{
	const char *raw = "_ZN3geo4GridIdE5relaxEi";
	const struct pf_function *f;
	struct profile *p;
	uint32_t id;

	CHECK(profile__new(&(struct profile_opts){ .demangle = true }, &p) == 0, "new");
	id = profile__add_function(p, raw, NULL);
	f = profile__function(p, id);
	CHECK(f && !strcmp(profile__str(p, f->name), "geo::Grid<double>::relax(int)"),
	      "name: %s", f ? profile__str(p, f->name) : "(none)");
	CHECK(f && !strcmp(profile__str(p, f->system_name), raw), "system_name: %s",
	      f ? profile__str(p, f->system_name) : "(none)");
	profile__free(p);

	CHECK(profile__new(&(struct profile_opts){ .demangle = false }, &p) == 0, "new");
	id = profile__add_function(p, raw, NULL);
	f = profile__function(p, id);
	CHECK(f && !strcmp(profile__str(p, f->name), raw), "--no-demangle name: %s",
	      f ? profile__str(p, f->name) : "(none)");
	profile__free(p);
}

int main(void)
{
	RUN(test_cxx);
	RUN(test_cxx_no_return_type);
	RUN(test_rust_legacy);
	RUN(test_rust_v0);
	RUN(test_plt_stub);
	RUN(test_not_mangled);
	RUN(test_profile_keeps_both);
	UNIT_EXIT();
}
