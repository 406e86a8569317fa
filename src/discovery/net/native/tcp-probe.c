/*
 * Native TCP connect probes for the port scan (see src/discovery/net/native-probes.ts).
 *
 * A turn is the ports one throttle slot probes one after another (as in tcp-connect.ts): at most one
 * connection of a turn is in flight, so the throttle's bounds mean what they mean for the JS engine.
 * Turns run on a few threads of this addon's own, each keeping every turn it holds in flight at once
 * with non-blocking connect() and waiting on all of them with one poll(): a probe costs socket,
 * connect, getsockopt(SO_ERROR) and close, and a wait serves every probe in flight. JavaScript sees a
 * turn once, when it ends, as one state per port.
 *
 * Plain C on node_api.h only (Node-API 8), so one build loads in any Node that has that API.
 */
#define NAPI_VERSION 8
#include <node_api.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A port's state in the answer; NOT_PROBED for the ports the turn did not reach (time up, cancelled). */
enum { NOT_PROBED = 0, OPEN = 1, REFUSED = 2, TIMEOUT = 3, FAILED = 4 };

#define MAX_WORKERS 16

struct worker;

typedef struct turn {
  struct turn *next;      /* in a worker's queue, then in a list of ended turns */
  struct turn *prev_pending, *next_pending; /* the engine's pending list (JS thread only) */
  double id;
  struct sockaddr_storage address;
  socklen_t address_length;
  uint16_t *ports;
  uint8_t *states;
  uint32_t count;
  uint32_t next_port;     /* index of the next port to start */
  int timeout_ms;
  double turn_ms;
  double started;
  int fd;                 /* the probe in flight, or -1 */
  double deadline;
  atomic_int cancelled;
  napi_deferred deferred;
  struct worker *worker;
} turn;

typedef struct engine engine;

typedef struct worker {
  engine *engine;
  pthread_t thread;
  pthread_mutex_t lock;
  turn *incoming;         /* submitted, not yet taken by the thread (guarded by lock) */
  int wake[2];            /* a pipe: a byte wakes the thread from poll() */
  atomic_int wake_pending;
  atomic_int stopping;
  uint32_t outstanding;   /* turns submitted and not answered (JS thread only) */
  /* The thread's own. */
  turn **active;
  uint32_t active_count, active_capacity;
  struct pollfd *polls;
  uint32_t polls_capacity;
} worker;

struct engine {
  napi_threadsafe_function done;
  worker workers[MAX_WORKERS];
  int worker_count;
  uint32_t pending;       /* turns not answered (JS thread only) */
  int referenced;
  turn *pending_list;
};

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void wake(worker *w) {
  if (!atomic_exchange(&w->wake_pending, 1)) {
    char byte = 1;
    ssize_t ignored = write(w->wake[1], &byte, 1);
    (void)ignored;
  }
}

/* Lets go of a probe's socket; an open one with a reset (SO_LINGER 0), as nmap does: no FIN, no TIME_WAIT. */
static void release(int fd, int connected) {
  if (connected) {
    struct linger reset = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  }
  close(fd);
}

static int state_of_error(int error) {
  if (error == 0) return OPEN;
  if (error == ECONNREFUSED) return REFUSED;
  if (error == ETIMEDOUT) return TIMEOUT;
  return FAILED;
}

/* Starts the turn's next port; answers whether a probe is now in flight (else the turn has ended). */
static int start_next(turn *t, double now) {
  while (t->fd < 0) {
    if (atomic_load(&t->cancelled) || t->next_port >= t->count || now - t->started >= t->turn_ms) return 0;
    uint32_t index = t->next_port++;
    struct sockaddr_storage target = t->address;
    uint16_t port = htons(t->ports[index]);
    if (target.ss_family == AF_INET6)
      ((struct sockaddr_in6 *)&target)->sin6_port = port;
    else
      ((struct sockaddr_in *)&target)->sin_port = port;
#ifdef SOCK_NONBLOCK
    int fd = socket(target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
#else
    int fd = socket(target.ss_family, SOCK_STREAM, 0);
    if (fd >= 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
#endif
    if (fd < 0) {
      t->states[index] = FAILED;
      continue;
    }
    if (connect(fd, (struct sockaddr *)&target, t->address_length) == 0) {
      t->states[index] = OPEN;
      release(fd, 1);
    } else if (errno == EINPROGRESS) {
      t->fd = fd;
      t->deadline = now + t->timeout_ms;
    } else {
      t->states[index] = state_of_error(errno);
      release(fd, 0);
    }
  }
  return 1;
}

/* Ends the probe in flight with `state`. */
static void settle(turn *t, int state) {
  t->states[t->next_port - 1] = (uint8_t)state;
  release(t->fd, state == OPEN);
  t->fd = -1;
}

/* Room for one more active turn and its pollfd (the wake pipe's is first); 0 when memory ran out. */
static int make_room(worker *w) {
  if (w->active_count < w->active_capacity) return 1;
  uint32_t capacity = w->active_capacity ? w->active_capacity * 2 : 64;
  turn **active = realloc(w->active, capacity * sizeof *active);
  if (!active) return 0;
  w->active = active;
  struct pollfd *polls = realloc(w->polls, (capacity + 1) * sizeof *polls);
  if (!polls) return 0; /* the larger active array is kept; capacity stays as the smaller */
  w->polls = polls;
  w->active_capacity = capacity;
  return 1;
}

static void *run_worker(void *arg) {
  worker *w = arg;
  turn *ended = NULL;
  for (;;) {
    char drain[64];
    while (read(w->wake[0], drain, sizeof drain) > 0) {
    }
    atomic_store(&w->wake_pending, 0);
    pthread_mutex_lock(&w->lock);
    turn *incoming = w->incoming;
    w->incoming = NULL;
    pthread_mutex_unlock(&w->lock);
    if (atomic_load(&w->stopping)) break;

    double now = now_ms();
    /* Oldest first: the queue is pushed at its head. */
    turn *reversed = NULL;
    while (incoming) {
      turn *next = incoming->next;
      incoming->next = reversed;
      reversed = incoming;
      incoming = next;
    }
    for (turn *t = reversed, *next; t; t = next) {
      next = t->next;
      t->started = now;
      if (start_next(t, now) && !make_room(w)) {
        /* Out of memory: the turn ends here, its port in flight unanswered (the scan gives it to another turn). */
        t->next_port--;
        release(t->fd, 0);
        t->fd = -1;
        t->next = ended;
        ended = t;
      } else if (t->fd >= 0) {
        w->active[w->active_count++] = t;
      } else {
        t->next = ended;
        ended = t;
      }
    }

    /* Every turn that has ended since the last answer goes to JavaScript in one call. */
    if (ended) {
      napi_call_threadsafe_function(w->engine->done, ended, napi_tsfn_nonblocking);
      ended = NULL;
    }

    if (!w->polls && !make_room(w)) {
      /* Not even room to wait on the wake pipe: try again shortly. */
      struct timespec pause = {0, 10 * 1000 * 1000};
      nanosleep(&pause, NULL);
      continue;
    }
    w->polls[0] = (struct pollfd){.fd = w->wake[0], .events = POLLIN};
    double soonest = -1;
    for (uint32_t i = 0; i < w->active_count; i++) {
      turn *t = w->active[i];
      w->polls[i + 1] = (struct pollfd){.fd = t->fd, .events = POLLOUT};
      /* A cancel whose wake came before wake_pending was cleared wrote no byte of its own: poll without waiting. */
      double due = atomic_load(&t->cancelled) ? now : t->deadline;
      if (soonest < 0 || due < soonest) soonest = due;
    }
    int wait = -1;
    if (soonest >= 0) {
      double left = soonest - now;
      wait = left <= 0 ? 0 : (int)left + 1;
    }
    if (poll(w->polls, w->active_count + 1, wait) < 0 && errno != EINTR) continue;

    now = now_ms();
    uint32_t kept = 0;
    for (uint32_t i = 0; i < w->active_count; i++) {
      turn *t = w->active[i];
      short revents = w->polls[i + 1].revents;
      if (revents) {
        int error = 0;
        socklen_t length = sizeof error;
        if (getsockopt(t->fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
        settle(t, state_of_error(error));
      } else if (atomic_load(&t->cancelled)) {
        settle(t, FAILED);
      } else if (now >= t->deadline) {
        settle(t, TIMEOUT);
      }
      if (t->fd >= 0 || start_next(t, now))
        w->active[kept++] = t;
      else {
        t->next = ended;
        ended = t;
      }
    }
    w->active_count = kept;
  }
  for (uint32_t i = 0; i < w->active_count; i++)
    if (w->active[i]->fd >= 0) close(w->active[i]->fd);
  return NULL;
}

static void free_turn(turn *t) {
  free(t->ports);
  free(t->states);
  free(t);
}

/* On the JS thread: answers the ended turns, each with its states as a Uint8Array. */
static void answer(napi_env env, napi_value callback, void *context, void *data) {
  (void)callback;
  engine *e = context;
  for (turn *t = data, *next; t; t = next) {
    next = t->next;
    if (env) {
      void *bytes;
      napi_value buffer, states;
      if (napi_create_arraybuffer(env, t->count, &bytes, &buffer) == napi_ok &&
          napi_create_typedarray(env, napi_uint8_array, t->count, buffer, 0, &states) == napi_ok) {
        memcpy(bytes, t->states, t->count);
        napi_resolve_deferred(env, t->deferred, states);
      } else {
        /* Never left pending: the caller hears that the turn failed. */
        napi_value message, error;
        napi_create_string_utf8(env, "a probe turn's answer could not be made", NAPI_AUTO_LENGTH, &message);
        napi_create_error(env, NULL, message, &error);
        napi_reject_deferred(env, t->deferred, error);
      }
    }
    if (t->prev_pending) t->prev_pending->next_pending = t->next_pending;
    else e->pending_list = t->next_pending;
    if (t->next_pending) t->next_pending->prev_pending = t->prev_pending;
    t->worker->outstanding--;
    e->pending--;
    free_turn(t);
  }
  if (env && e->pending == 0 && e->referenced) {
    napi_unref_threadsafe_function(env, e->done);
    e->referenced = 0;
  }
}

/* Stops the probe threads (the JS thread; no turn may be pending). */
static void stop_workers(engine *e) {
  for (int i = 0; i < e->worker_count; i++) {
    worker *w = &e->workers[i];
    atomic_store(&w->stopping, 1);
    wake(w);
    pthread_join(w->thread, NULL);
    close(w->wake[0]);
    close(w->wake[1]);
    pthread_mutex_destroy(&w->lock);
    free(w->active);
    free(w->polls);
  }
  e->worker_count = 0;
}

/* At the environment's end. The thread-safe function is closed by Node after this hook (it was made before
   the hook was added), so no thread calls it once closed. */
static void stop(void *arg) { stop_workers(arg); }

/* The thread-safe function's finalizer: the engine goes with it, once its last answers are freed. */
static void free_engine_after_answers(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  free(data);
}

static napi_value throw_error(napi_env env, const char *message) {
  napi_throw_error(env, NULL, message);
  return NULL;
}

static int start_workers(napi_env env, engine *e, int count) {
  if (!e->done) {
    napi_value name;
    napi_create_string_utf8(env, "sightline tcp probes", NAPI_AUTO_LENGTH, &name);
    if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, e, free_engine_after_answers, e, answer,
                                        &e->done) != napi_ok) {
      e->done = NULL;
      return 0;
    }
    napi_unref_threadsafe_function(env, e->done);
    /* Added after the thread-safe function, so it runs before Node closes that. */
    napi_add_env_cleanup_hook(env, stop, e);
  }
  for (int i = 0; i < count; i++) {
    worker *w = &e->workers[i];
    memset(w, 0, sizeof *w);
    w->engine = e;
    pthread_mutex_init(&w->lock, NULL);
    if (pipe(w->wake) != 0) break;
    for (int end = 0; end < 2; end++) {
      fcntl(w->wake[end], F_SETFL, fcntl(w->wake[end], F_GETFL) | O_NONBLOCK);
      fcntl(w->wake[end], F_SETFD, FD_CLOEXEC);
    }
    if (pthread_create(&w->thread, NULL, run_worker, w) != 0) {
      close(w->wake[0]);
      close(w->wake[1]);
      break;
    }
    e->worker_count++;
  }
  return e->worker_count > 0;
}

static engine *engine_of(napi_env env) {
  engine *e = NULL;
  napi_get_instance_data(env, (void **)&e);
  return e;
}

/* start(threads): starts the probe threads (at most MAX_WORKERS); probe() starts them too. */
static napi_value start(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  int32_t threads = 0;
  if (argc < 1 || napi_get_value_int32(env, argv[0], &threads) != napi_ok || threads < 1)
    return throw_error(env, "start(threads) needs a positive number of threads");
  if (threads > MAX_WORKERS) threads = MAX_WORKERS;
  engine *e = engine_of(env);
  if (e->worker_count == 0 && !start_workers(env, e, threads))
    return throw_error(env, "could not start the probe threads");
  napi_value count;
  napi_create_int32(env, e->worker_count, &count);
  return count;
}

/* stop(): lets the probe threads go when no turn is pending (a later probe starts them again);
   answers whether they were stopped. */
static napi_value stop_js(napi_env env, napi_callback_info info) {
  (void)info;
  engine *e = engine_of(env);
  napi_value stopped;
  if (e->pending == 0) stop_workers(e);
  napi_get_boolean(env, e->pending == 0, &stopped);
  return stopped;
}

/* probe(id, address, ports: Uint16Array, timeoutMs, turnMs): Promise<Uint8Array> */
static napi_value probe(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  if (argc < 5) return throw_error(env, "probe(id, address, ports, timeoutMs, turnMs)");
  engine *e = engine_of(env);
  if (e->worker_count == 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (!start_workers(env, e, cores < 1 ? 1 : cores > 4 ? 4 : (int)cores))
      return throw_error(env, "could not start the probe threads");
  }

  double id, timeout_ms, turn_ms;
  char address[INET6_ADDRSTRLEN + 64];
  size_t address_length;
  napi_typedarray_type type;
  size_t count;
  void *data;
  if (napi_get_value_double(env, argv[0], &id) != napi_ok ||
      napi_get_value_string_utf8(env, argv[1], address, sizeof address, &address_length) != napi_ok ||
      napi_get_typedarray_info(env, argv[2], &type, &count, &data, NULL, NULL) != napi_ok ||
      type != napi_uint16_array || napi_get_value_double(env, argv[3], &timeout_ms) != napi_ok ||
      napi_get_value_double(env, argv[4], &turn_ms) != napi_ok)
    return throw_error(env, "probe(id: number, address: string, ports: Uint16Array, timeoutMs: number, turnMs: number)");

  struct addrinfo hints = {.ai_flags = AI_NUMERICHOST, .ai_socktype = SOCK_STREAM}, *found = NULL;
  if (getaddrinfo(address, NULL, &hints, &found) != 0 || !found)
    return throw_error(env, "probe: not an IPv4 or IPv6 address");

  turn *t = calloc(1, sizeof *t);
  if (t) {
    t->ports = malloc(count * sizeof *t->ports + 1);
    t->states = calloc(count + 1, 1);
  }
  if (!t || !t->ports || !t->states) {
    if (t) free_turn(t);
    freeaddrinfo(found);
    return throw_error(env, "probe: out of memory");
  }
  memcpy(&t->address, found->ai_addr, found->ai_addrlen);
  t->address_length = found->ai_addrlen;
  freeaddrinfo(found);
  memcpy(t->ports, data, count * sizeof *t->ports);
  t->count = (uint32_t)count;
  t->id = id;
  t->timeout_ms = timeout_ms < 1 ? 1 : timeout_ms > 3600e3 ? 3600000 : (int)timeout_ms;
  t->turn_ms = turn_ms;
  t->fd = -1;

  napi_value promise;
  napi_create_promise(env, &t->deferred, &promise);

  worker *w = &e->workers[0];
  for (int i = 1; i < e->worker_count; i++)
    if (e->workers[i].outstanding < w->outstanding) w = &e->workers[i];
  t->worker = w;
  w->outstanding++;
  e->pending++;
  t->next_pending = e->pending_list;
  if (e->pending_list) e->pending_list->prev_pending = t;
  e->pending_list = t;
  if (!e->referenced) {
    napi_ref_threadsafe_function(env, e->done);
    e->referenced = 1;
  }

  pthread_mutex_lock(&w->lock);
  t->next = w->incoming;
  w->incoming = t;
  pthread_mutex_unlock(&w->lock);
  wake(w);
  return promise;
}

/* cancel(id): the turn ends at once; its port in flight is answered as an error. */
static napi_value cancel(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  double id;
  if (argc < 1 || napi_get_value_double(env, argv[0], &id) != napi_ok) return throw_error(env, "cancel(id)");
  engine *e = engine_of(env);
  for (turn *t = e->pending_list; t; t = t->next_pending)
    if (t->id == id) {
      atomic_store(&t->cancelled, 1);
      wake(t->worker);
    }
  return NULL;
}

/* Frees an engine that never started; a started one is freed with its thread-safe function. */
static void free_engine(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  engine *e = data;
  if (!e->done) free(e);
}

NAPI_MODULE_INIT() {
  engine *e = calloc(1, sizeof *e);
  napi_set_instance_data(env, e, free_engine, NULL);
  napi_property_descriptor properties[] = {
      {"start", NULL, start, NULL, NULL, NULL, napi_enumerable, NULL},
      {"probe", NULL, probe, NULL, NULL, NULL, napi_enumerable, NULL},
      {"cancel", NULL, cancel, NULL, NULL, NULL, napi_enumerable, NULL},
      {"stop", NULL, stop_js, NULL, NULL, NULL, napi_enumerable, NULL},
  };
  napi_define_properties(env, exports, sizeof properties / sizeof *properties, properties);
  return exports;
}
