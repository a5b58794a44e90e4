/*
 * --metrics-port: a minimal HTTP/1.0 server on 127.0.0.1 only (never
 * another interface) that answers every request with the Prometheus text
 * of the runtime the simulation is running now (accel_runtime_write_
 * prometheus), or an empty body between runs. One thread, one connection
 * at a time: enough for `curl` and a Prometheus scraper.
 *
 * The engine attaches its runtime after creating it and detaches it
 * before destroying it; the mutex makes detach wait for a scrape in
 * progress, so a scrape never touches a destroyed runtime.
 */
#include "nodesim.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static accel_runtime *attached; /* under lock */
static int listen_fd = -1;

void ns_metrics_attach(accel_runtime *rt)
{
    pthread_mutex_lock(&lock);
    attached = rt;
    pthread_mutex_unlock(&lock);
}

static char *render(size_t *len)
{
    size_t cap = 1 << 16;
    for (;;) {
        char *buf = malloc(cap);
        if (!buf)
            return NULL;
        *len = 0;
        pthread_mutex_lock(&lock);
        int st = attached ? accel_runtime_write_prometheus(attached, buf, cap, len)
                          : ACCEL_OK;
        pthread_mutex_unlock(&lock);
        if (st != ACCEL_OK) {
            free(buf);
            return NULL;
        }
        if (*len <= cap)
            return buf;
        free(buf);
        cap = *len + 4096; /* grew meanwhile: retry bigger */
    }
}

static void *serve(void *arg)
{
    (void)arg;
    for (;;) {
        int c = accept(listen_fd, NULL, NULL);
        if (c < 0)
            continue;
        char req[2048];
        ssize_t got = recv(c, req, sizeof(req), 0); /* the request line */
        (void)got;
        size_t len = 0;
        char *body = render(&len);
        char head[160];
        int hl = snprintf(head, sizeof(head),
                          "HTTP/1.0 %s\r\nContent-Type: text/plain; version=0.0.4\r\n"
                          "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                          body ? "200 OK" : "500 Internal Server Error", body ? len : 0);
        ssize_t w = send(c, head, (size_t)hl, MSG_NOSIGNAL);
        for (size_t off = 0; body && w >= 0 && off < len; off += (size_t)w)
            w = send(c, body + off, len - off, MSG_NOSIGNAL);
        free(body);
        close(c);
    }
    return NULL;
}

int ns_metrics_serve(unsigned port)
{
    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0)
        return -1;
    int one = 1;
    setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* loopback only */
    if (bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(listen_fd, 8) != 0) {
        perror("accel-nodesim: --metrics-port");
        close(listen_fd);
        return -1;
    }
    pthread_t th;
    if (pthread_create(&th, NULL, serve, NULL) != 0)
        return -1;
    pthread_detach(th);
    fprintf(stderr, "accel-nodesim: metrics on http://127.0.0.1:%u/metrics\n", port);
    return 0;
}
