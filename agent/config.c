/* Modes and config options. (Being written.) */
#include "agent/internal.h"
