#define SCALE 1
