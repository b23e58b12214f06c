#define SCALE 9
