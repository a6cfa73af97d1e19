/* See json.h. */
#include "common/json.h"

#include <errno.h>
#include <string.h>

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

FILE *specx_json_open(const char *file)
{
    return strcmp(file, "-") == 0 ? stdout : fopen(file, "w");
}

int specx_json_close(FILE *f)
{
    int err = ferror(f) ? EIO : 0;
    if (f != stdout && fclose(f) != 0)
        err = errno;
    else if (f == stdout && fflush(f) != 0)
        err = errno;
    errno = err;
    return err ? -1 : 0;
}
