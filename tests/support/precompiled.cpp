// The translation unit that compiles tests/support/precompiled.h for every test target.
