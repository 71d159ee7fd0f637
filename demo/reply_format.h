/* reply_format.h — a character's structured reply (the JSON its schema asks for, e.g.
 * {"mood": "calm", "action": "trade", "line": "..."}) as the panel shows it:
 * "(mood: calm, action: trade) ..." — the spoken line last, the rest as tags. */
#ifndef REPLY_FORMAT_H
#define REPLY_FORMAT_H

#include <stddef.h>

/* The shown text of reply json[0..len) (malloc'd), or NULL when it is not a JSON object
 * (then the raw text stays). The member named "line" or "say" is the spoken line; strings,
 * numbers and booleans among the others become tags, in their order. */
char *reply_format(const char *json, size_t len);

#endif
