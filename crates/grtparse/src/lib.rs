//! grtparse: turns grtrace streams into one human line per event, like blkparse
