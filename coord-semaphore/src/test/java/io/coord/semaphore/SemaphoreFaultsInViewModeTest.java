package io.coord.semaphore;

import io.coord.testkit.InViewMode;

@InViewMode
class SemaphoreFaultsInViewModeTest extends SemaphoreFaultsTest {}
