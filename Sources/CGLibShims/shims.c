#include "CGLibShims.h"
