#include <iostream>
int main() { std::cout << "fuseplan\n"; return 0; }
