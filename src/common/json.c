/* See json.h. */
#include "json.h"

void specx_json_string(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void specx_json_argv(FILE *out, char *const *argv)
{
    fputc('[', out);
    for (char *const *a = argv; *a; a++) {
        if (a != argv)
            fputs(", ", out);
        specx_json_string(out, *a);
    }
    fputc(']', out);
}
