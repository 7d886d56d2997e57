// An experiment, not part of Burrow: preloaded into a process (LD_PRELOAD), it waits
// DROP_FILE_PAGES_AFTER seconds, then unmaps the pages of every private, read-only file mapping
// that holds no page of its own (smaps "Anonymous: 0 kB"): code and read-only data of the binary
// and its libraries. Their content stays in the page cache; whatever runs again is mapped back
// by the next page fault. bench/idle-file-pages.sh uses it to show how much of an idle relay's
// resident set is file pages it mapped at start and no longer touches.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct range {
  unsigned long start, end;
};

static void drop(void) {
  FILE* f = fopen("/proc/self/smaps", "r");
  if (!f) return;
  static struct range ranges[4096];
  int count = 0, candidate = 0;
  long anon = -1, rss = 0, total = 0;
  unsigned long start = 0, end = 0;
  char line[4096];
  while (fgets(line, sizeof line, f)) {
    unsigned long a, b;
    char perms[8];
    int path = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &a, &b, perms, &path) == 3) {
      if (candidate && anon == 0 && count < 4096) ranges[count++] = (struct range){start, end};
      if (candidate && anon == 0) total += rss;
      start = a, end = b, anon = -1, rss = 0;
      candidate = (strcmp(perms, "r-xp") == 0 || strcmp(perms, "r--p") == 0) && path > 0 &&
                  line[path] == '/';
      continue;
    }
    sscanf(line, "Rss: %ld kB", &rss);
    sscanf(line, "Anonymous: %ld kB", &anon);
  }
  if (candidate && anon == 0 && count < 4096) ranges[count++] = (struct range){start, end};
  if (candidate && anon == 0) total += rss;
  fclose(f);
  for (int i = 0; i < count; ++i)
    madvise((void*)ranges[i].start, ranges[i].end - ranges[i].start, MADV_DONTNEED);
  fprintf(stderr, "drop-file-pages: unmapped %ld KiB of %d file mappings\n", total, count);
}

static void* later(void* arg) {
  sleep((unsigned)(long)arg);
  drop();
  return NULL;
}

__attribute__((constructor)) static void start(void) {
  const char* after = getenv("DROP_FILE_PAGES_AFTER");
  if (!after) return;
  pthread_t t;
  if (pthread_create(&t, NULL, later, (void*)(long)atoi(after)) == 0) pthread_detach(t);
}
