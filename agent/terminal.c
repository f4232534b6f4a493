/* Terminals. (Being written.) */
#include "agent/internal.h"
