package io.coord.mutex;

import io.coord.testkit.InViewMode;

@InViewMode
class MutexFaultInViewModeTest extends MutexFaultTest {}
