// Fine: same room.
#include <string>
