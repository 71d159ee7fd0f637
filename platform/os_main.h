/* os_main.h — what a program's main() needs from the operating system before it reads its
 * command line: the arguments in UTF-8, the encoding the library takes (Windows passes
 * main() its ANSI code page, in which a path such as C:\Users\José is not UTF-8), and
 * standard streams that carry bytes as they are (Windows' text mode would write "\r\n"
 * for every "\n" of a generated text or a JSON line). For the programs in tools/. */
#ifndef EMBER_OS_MAIN_H
#define EMBER_OS_MAIN_H

#include <stdbool.h>

/* Replaces *argv with the command line in UTF-8 (on POSIX, left as it is: the bytes the
 * shell gave), sets stdin, stdout and stderr to pass bytes through and a console to show
 * and read UTF-8. The new argv lives until the process ends. False when the command line
 * could not be converted (out of memory); *argc and *argv are then unchanged. */
bool ember_main_begin(int *argc, char ***argv);

#endif
