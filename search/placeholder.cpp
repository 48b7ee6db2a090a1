namespace fuseplan::search_detail { int placeholder = 0; }
