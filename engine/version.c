/* version.c — ember_version: the version the library was built as. */
#include "ember.h"

const char *ember_version(void) { return EMBER_VERSION_STRING; }
