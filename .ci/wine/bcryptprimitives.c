/* A stand-in for bcryptprimitives.dll in the Wine prefix that runs hrr's
 * Windows tests. Debian 12's Wine 8 ships no bcryptprimitives.dll, and
 * Rust's std imports ProcessPrng from it for HashMap seeds and random
 * numbers, so no Rust program starts without it. ProcessPrng fills a
 * buffer with random bytes; RtlGenRandom (advapi32's SystemFunction036)
 * does the same from the same system generator. Test prefix only: hrr
 * itself is unchanged and real Windows has the real DLL. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG chunk = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
