namespace fuseplan::costmodel_detail { int placeholder = 0; }
