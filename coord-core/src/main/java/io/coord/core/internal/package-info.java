/**
 * coord's shared machinery: the lease engine, the per-client registry and its session events, deadlines, result
 * codes, single-flight reads, ordered listener delivery and the executors. <b>Not API</b>: nothing here is covered by
 * the compatibility promise of the public API, and any of it may change in any release.
 *
 * <p>It is public only because Java has no friend modules: every published module (mutex, read/write lock,
 * semaphore, queue, election) is a separate artifact in its own package and builds on this layer instead of keeping
 * a copy, so the types they share must be visible across packages. What no other module needs stays
 * package-private.
 */
package io.coord.core.internal;
