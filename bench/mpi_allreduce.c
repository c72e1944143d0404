/*
 * The Open MPI baseline for bench/run-netbench: MPI_Allreduce (MPI_FLOAT, MPI_SUM) of each
 * size given on the command line, timed between a barrier and the call's return.
 *
 * Build: mpicc -O2 -o mpi_allreduce mpi_allreduce.c
 * Run:   mpirun ... mpi_allreduce SIZE_BYTES[,SIZE_BYTES...] [WARMUP_BYTES]
 *
 * Inputs are small multiples of 1/512 ((i*7 + rank*13) mod 1025 - 512, over 512, as in
 * gloo_rank.py), so any order of additions gives the exact sum, and every rank checks its
 * result against that sum bit for bit. Rank 0 prints one JSON line per size: the slowest
 * rank's seconds, every rank's CPU seconds (user + system) added up, the timed region's
 * start and end (Unix time; start at rank 0, end at the slowest rank), and whether every
 * rank's result was exact.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec / 1e6;
}

static double unix_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static double mono_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static float value(long i, int rank)
{
    return (float)(((i * 7 + (long)rank * 13) % 1025) - 512) / 512.0f;
}

static void fill(float *x, long n, int rank)
{
    for (long i = 0; i < n; i++)
        x[i] = value(i, rank);
}

/* Whether x is exactly the sum over every rank's input (exact: the values are dyadic). */
static int exact(const float *x, long n, int world)
{
    for (long i = 0; i < n; i++) {
        float s = 0.0f;
        for (int r = 0; r < world; r++)
            s += value(i, r);
        if (x[i] != s)
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (argc < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_allreduce SIZE_BYTES[,SIZE_BYTES...] [WARMUP_BYTES]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long warm = argc > 2 ? atol(argv[2]) / 4 : (1 << 20) / 4;
    char *list = strdup(argv[1]);

    float *w = malloc(sizeof(float) * warm), *wout = malloc(sizeof(float) * warm);
    fill(w, warm, rank);
    MPI_Allreduce(w, wout, (int)warm, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    free(w);
    free(wout);

    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        long bytes = atol(tok), n = bytes / 4;
        float *in = malloc(sizeof(float) * n), *out = malloc(sizeof(float) * n);
        if (!in || !out) {
            fprintf(stderr, "rank %d: out of memory for %ld bytes\n", rank, bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fill(in, n, rank);
        memset(out, 0, sizeof(float) * n);
        MPI_Barrier(MPI_COMM_WORLD);
        double c0 = cpu_seconds(), w0 = unix_seconds(), t0 = mono_seconds();
        MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t1 = mono_seconds(), w1 = unix_seconds(), c1 = cpu_seconds();
        double mine[2] = {t1 - t0, w1}, slowest[2];
        double cpu = c1 - c0, cpu_all;
        int ok = exact(out, n, world), ok_all;
        MPI_Reduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&cpu, &cpu_all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&ok, &ok_all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            printf("{\"system\": \"mpi\", \"world\": %d, \"bytes\": %ld, \"seconds\": %.6f, "
                   "\"cpu_seconds\": %.6f, \"start\": %.6f, \"end\": %.6f, \"verified\": %s}\n",
                   world, bytes, slowest[0], cpu_all, w0, slowest[1], ok_all ? "true" : "false");
            fflush(stdout);
        }
        free(in);
        free(out);
    }
    free(list);
    MPI_Finalize();
    return 0;
}
